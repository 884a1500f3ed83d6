"""The README's Python examples run as written: in order, as one script, in a fresh
interpreter outside the checkout (so only the installed ``boxfish`` namespace is importable)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", README.read_text(), flags=re.M | re.S)


def test_the_readme_has_python_examples_in_the_boxfish_namespace():
    blocks = python_blocks()
    assert len(blocks) >= 2
    imports = [ln for b in blocks for ln in b.splitlines() if re.match(r"\s*(from|import) ", ln)]
    assert imports and all(re.match(r"\s*(from|import) boxfish\b", ln) for ln in imports), imports


def test_the_readme_examples_run(tmp_path):
    script = tmp_path / "readme_examples.py"
    script.write_text("\n".join(python_blocks()) + "\nprint('README examples: done')\n")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.rstrip().endswith("README examples: done")
