"""How the house reads: files per folder, the longest functions (Python and C), the largest
files, of the working tree or of git revisions side by side.

    python bench/house_bench.py                      # the working tree
    python bench/house_bench.py --rev 8b911dd --rev HEAD --most 12

Counts the product code only (engine/, service/, workers/, client/): a file is a ``.py`` or a
``.c``/``.h`` file. A function's length is its line span (decorators excluded); a C function is
a top-level definition, from its signature to its closing brace.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("engine", "service", "workers", "client")
C_DEF = re.compile(r"^(?:static\s+|inline\s+|NODE_PHASE\s+|PyMODINIT_FUNC\s*)*[A-Za-z_][\w \*]*?"
                   r"\b(\w+)\s*\([^;{]*\)\s*\{", re.M)


def files_at(rev: str | None) -> dict[str, str]:
    """Path -> text of the product's source files at ``rev`` (None: the working tree)."""
    if rev is None:
        paths = subprocess.run(["git", "-C", str(ROOT), "ls-files", "--cached", "--others",
                                "--exclude-standard", *PRODUCT], capture_output=True,
                               text=True, check=True).stdout.split()
        return {p: (ROOT / p).read_text() for p in paths
                if p.endswith((".py", ".c", ".h")) and (ROOT / p).is_file()}
    paths = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "-r", "--name-only", rev,
                            *PRODUCT], capture_output=True, text=True, check=True).stdout.split()
    return {p: subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{p}"],
                              capture_output=True, text=True, check=True).stdout
            for p in paths if p.endswith((".py", ".c", ".h"))}


def python_functions(path: str, text: str) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out.append((node.end_lineno - node.lineno + 1, f"{path}:{node.lineno} {node.name}"))
    return out


def c_functions(path: str, text: str) -> list[tuple[int, str]]:
    out = []
    for m in C_DEF.finditer(text):
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        start = text.count("\n", 0, m.start()) + 1
        out.append((text.count("\n", 0, i) + 2 - start, f"{path}:{start} {m.group(1)}"))
    return out


def report(rev: str | None, most: int) -> None:
    files = files_at(rev)
    print(f"\n## {rev or 'working tree'}: {len(files)} files, "
          f"{sum(t.count(chr(10)) for t in files.values()):,} lines\n")
    folders = Counter(str(Path(p).parent) for p in files)
    print("files per folder: " + ", ".join(f"{d} {n}" for d, n in sorted(folders.items())))
    py = sorted((f for p, t in files.items() if p.endswith(".py")
                 for f in python_functions(p, t)), reverse=True)
    c = sorted((f for p, t in files.items() if p.endswith((".c", ".h"))
                for f in c_functions(p, t)), reverse=True)
    for name, funcs in (("Python", py), ("C", c)):
        over = sum(1 for n, _ in funcs if n > 120)
        print(f"\nlongest {name} functions ({over} over 120 lines):")
        for n, where in funcs[:most]:
            print(f"  {n:5d}  {where}")
    print("\nlargest files:")
    for path, text in sorted(files.items(), key=lambda kv: -kv[1].count("\n"))[:most]:
        print(f"  {text.count(chr(10)):5d}  {path}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", action="append", help="a git revision (repeatable)")
    ap.add_argument("--most", type=int, default=8, help="rows per list")
    args = ap.parse_args(argv)
    for rev in args.rev or [None]:
        report(rev, args.most)
    return 0


if __name__ == "__main__":
    sys.exit(main())
