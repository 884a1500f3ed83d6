"""The search node's phases: one list, the same names in the same order in both cores.

The list is :data:`engine.dots.search.phases.PHASES`, whose docstring says what each phase
promises. The compiled core exports the names its ``search()`` runs (``_core.PHASES``), and
that driver (``engine/dots/search/core/node.c``) calls functions of those names in that order;
the Python node's ``search`` (made by :func:`engine.dots.search.node.build_node`) calls
closures of the same names in the same order, each made by a function of that name with a
leading underscore. A phase added, removed, renamed or moved in one core and not in the
other fails here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from boxfish.engine.dots.search import compiled, phases
from boxfish.engine.dots.search.phases import PHASES

ROOT = Path(__file__).resolve().parents[3]
C_SOURCE = ROOT / "engine" / "dots" / "search" / "core" / "node.c"
PY_SOURCE = ROOT / "engine" / "dots" / "search" / "node.py"

PHASE_NAME = re.compile(r"\bnode_[a-z]+\b")


def c_function_body(src: str, name: str) -> str:
    """The body of the definition of the C function ``name`` (not its prototype)."""
    m = re.search(rf"^static int {name}\([^;{{]*\)\s*\{{", src, re.M)
    assert m, f"no definition of {name}() in {C_SOURCE.name}"
    depth, i = 1, m.end()
    while depth:
        depth += {"{": 1, "}": -1}.get(src[i], 0)
        i += 1
    return src[m.end():i - 1]


def c_phase_calls() -> list[str]:
    return re.findall(r"\b(node_[a-z]+)\(", c_function_body(C_SOURCE.read_text(), "search"))


def c_phase_definitions() -> list[str]:
    return re.findall(r"^NODE_PHASE \w+ (node_[a-z]+)\(", C_SOURCE.read_text(), re.M)


def py_build_node() -> ast.FunctionDef:
    tree = ast.parse(PY_SOURCE.read_text())
    return next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "build_node")


def py_phase_calls() -> list[str]:
    search = next(n for n in py_build_node().body
                  if isinstance(n, ast.FunctionDef) and n.name == "search")
    calls = [n for n in ast.walk(search)
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
             and PHASE_NAME.fullmatch(n.func.id)]
    calls.sort(key=lambda n: (n.lineno, n.col_offset))
    return [n.func.id for n in calls]


def py_phase_definitions() -> list[str]:
    """The functions that make the phases (``_node_x``, at module level), in source order,
    each defining the closure ``node_x``."""
    tree = ast.parse(PY_SOURCE.read_text())
    out = []
    for n in tree.body:
        if isinstance(n, ast.FunctionDef) and PHASE_NAME.fullmatch(n.name.lstrip("_")):
            inner = [f.name for f in n.body if isinstance(f, ast.FunctionDef)]
            assert inner == [n.name.lstrip("_")], (n.name, inner)
            out.append(inner[0])
    return out


def test_the_compiled_core_runs_the_phases_of_the_one_list():
    assert compiled.available(), compiled.UNAVAILABLE_REASON
    from boxfish.engine.dots.search import _core

    assert _core.PHASES == PHASES


def test_both_drivers_call_the_same_phases_in_the_same_order():
    assert c_phase_calls() == py_phase_calls() == list(PHASES)


def test_the_phases_are_defined_in_their_order_in_both_cores():
    assert c_phase_definitions() == py_phase_definitions() == list(PHASES)


def test_the_one_description_covers_every_phase_in_order():
    """The docstring of :mod:`phases` describes each phase once (a line ````node_x```` each),
    and no other source lists them."""
    assert re.findall(r"^``(node_[a-z]+)``$", phases.__doc__, re.M) == list(PHASES)
    listed = re.compile(r"^\s*(?:#|\*)\s+node_[a-z]+\s{2,}", re.M)
    for source in (C_SOURCE, PY_SOURCE):
        assert not listed.search(source.read_text()), f"{source.name} lists the phases again"


def test_the_c_phases_are_forced_inline():
    """search() compiles to one function, as fast as before it was split in phases."""
    src = C_SOURCE.read_text()
    assert re.search(r"^#define NODE_PHASE static inline __attribute__\(\(always_inline\)\)$",
                     src, re.M)
