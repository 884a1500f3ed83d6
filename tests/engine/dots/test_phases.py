"""The search node's phases: the same names in the same order in both cores (issue 23).

The compiled core's ``search()`` (``engine/dots/search/_core.c``) is a driver that calls its phase
functions ``node_*`` in order; the Python core's ``search`` (the closure built by
``Searcher._build_search`` in ``engine/dots/search/node.py``) calls nested functions of the
same names in the same order. These tests read both sources, so that a phase added, removed,
renamed or moved in one core and not in the other fails here; and so do the phase lists of
the two comment blocks that say what each phase promises.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
C_SOURCE = ROOT / "engine" / "dots" / "search" / "core" / "node.c"
PY_SOURCE = ROOT / "engine" / "dots" / "search" / "node.py"

PHASES = ("node_captures", "node_probe", "node_leaf", "node_generate", "node_etc",
          "node_children", "node_store")
PHASE_NAME = re.compile(r"\bnode_[a-z]+\b")


def c_search_body(src: str) -> str:
    """The body of the definition of ``search()`` (not its prototype)."""
    m = re.search(r"^static int search\([^;{]*\)\s*\{", src, re.M)
    assert m, "no definition of search() in _core.c"
    depth, i = 1, m.end()
    while depth:
        depth += {"{": 1, "}": -1}.get(src[i], 0)
        i += 1
    return src[m.end():i - 1]


def c_phase_calls() -> list[str]:
    return re.findall(r"\b(node_[a-z]+)\(", c_search_body(C_SOURCE.read_text()))


def c_phase_definitions() -> list[str]:
    return re.findall(r"^NODE_PHASE \w+ (node_[a-z]+)\(", C_SOURCE.read_text(), re.M)


def c_phase_list() -> list[str]:
    """The phases listed by the comment block above the phases (`` *   node_x  ...``)."""
    return re.findall(r"^ \*   (node_[a-z]+)  ", C_SOURCE.read_text(), re.M)


def py_build_search() -> ast.FunctionDef:
    tree = ast.parse(PY_SOURCE.read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Searcher")
    return next(n for n in cls.body
                if isinstance(n, ast.FunctionDef) and n.name == "_build_search")


def py_phase_calls() -> list[str]:
    search = next(n for n in py_build_search().body
                  if isinstance(n, ast.FunctionDef) and n.name == "search")
    calls = [n for n in ast.walk(search)
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
             and PHASE_NAME.fullmatch(n.func.id)]
    calls.sort(key=lambda n: (n.lineno, n.col_offset))
    return [n.func.id for n in calls]


def py_phase_definitions() -> list[str]:
    return [n.name for n in py_build_search().body
            if isinstance(n, ast.FunctionDef) and PHASE_NAME.fullmatch(n.name)]


def py_phase_list() -> list[str]:
    """The phases listed by the comment block above the phases (``#   node_x  ...``)."""
    return re.findall(r"^\s*#   (node_[a-z]+)  ", PY_SOURCE.read_text(), re.M)


def test_both_drivers_call_the_same_phases_in_the_same_order():
    assert c_phase_calls() == py_phase_calls() == list(PHASES)


def test_the_phases_are_defined_in_their_order_in_both_cores():
    assert c_phase_definitions() == py_phase_definitions() == list(PHASES)


def test_both_comment_blocks_list_the_phases_in_their_order():
    assert c_phase_list() == py_phase_list() == list(PHASES)


def test_the_c_phases_are_forced_inline():
    """search() compiles to one function, as fast as before it was split in phases."""
    src = C_SOURCE.read_text()
    assert re.search(r"^#define NODE_PHASE static inline __attribute__\(\(always_inline\)\)$",
                     src, re.M)
