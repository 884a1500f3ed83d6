"""The Python examples of the README and of the docs pages run as written: each document's
```python blocks in order, as one script, in a fresh interpreter outside the checkout (so only
the installed ``boxfish`` namespace is importable). A block not meant to run uses another info
string (```py, ```text)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
#: The Python client's page: the bots the client tests run.
CLIENT_PAGE = DOCS / "client.md"
#: The README stays a first page: at most this many lines (the rest is in docs/).
README_MAX_LINES = 300


def python_blocks(path: Path = README) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", path.read_text(), flags=re.M | re.S)


def documents() -> list[Path]:
    """The README and every docs page with a ```python block."""
    return [README] + [p for p in sorted(DOCS.rglob("*.md")) if python_blocks(p)]


def _name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_the_examples_are_where_they_moved():
    names = {_name(p) for p in documents()}
    assert {"README.md", "docs/client.md", "docs/engine.md"} <= names, names


def test_the_readme_is_a_first_page():
    assert len(README.read_text().splitlines()) <= README_MAX_LINES


@pytest.mark.parametrize("path", documents(), ids=_name)
def test_the_examples_import_only_the_boxfish_namespace(path):
    blocks = python_blocks(path)
    assert blocks
    imports = [ln for b in blocks for ln in b.splitlines() if re.match(r"\s*(from|import) ", ln)]
    assert imports and all(re.match(r"\s*(from|import) boxfish\b", ln) for ln in imports), imports


@pytest.mark.parametrize("path", documents(), ids=_name)
def test_the_examples_run(tmp_path, path):
    script = tmp_path / f"{path.stem}_examples.py"
    script.write_text("\n".join(python_blocks(path)) + "\nprint('examples: done')\n")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.rstrip().endswith("examples: done")
