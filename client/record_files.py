"""``boxfish export GAME_ID`` and ``boxfish import FILE``: game records through the API.

``export`` writes the game's record (``GET /v1/games/{id}/record``) to standard output or to
``-o FILE``; ``import`` sends a record file (``-`` for standard input) to
``POST /v1/games/import`` and prints the new game's id and write token on one line,
``<id> <token>``. Exit status: 0 when done; 2 when the server refuses for good (404 no such
game, 422 a record refused: the move and the reason are printed); 1 on any other error (no
server, an unreadable file).
"""

from __future__ import annotations

import sys
from typing import TextIO

from .client import Client
from .errors import BoxfishError, InvalidRecord, InvalidRequest, NotFound


def _refused(command: str, exc: BoxfishError, err: TextIO) -> int:
    if isinstance(exc, InvalidRecord):
        where = f" at move {exc.move_number}" if exc.move_number is not None else ""
        print(f"boxfish {command}: record refused{where} ({exc.reason}): {exc.detail}",
              file=err)
        return 2
    if isinstance(exc, (NotFound, InvalidRequest)):
        print(f"boxfish {command}: {exc.detail}", file=err)
        return 2
    print(f"boxfish {command}: {exc}", file=err)
    return 1


def run_export(url: str, game_id: str, path: str | None = None, at: int | None = None,
               out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Write the record of ``game_id`` (up to serial ``at``) to ``path`` (None or ``-``:
    ``out``); the exit status (module)."""
    out, err = out or sys.stdout, err or sys.stderr
    try:
        with Client(url) as api:
            text = api.export_record(game_id, at=at)
    except BoxfishError as exc:
        return _refused("export", exc, err)
    if path is None or path == "-":
        out.write(text)
        return 0
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as exc:
        print(f"boxfish export: cannot write {path}: {exc}", file=err)
        return 1
    return 0


def run_import(url: str, path: str, format: str = "boxfish", size: str | None = None,
               out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Import the record in ``path`` (``-``: standard input) in ``format``; ``size``
    (``WxH``) for an OpenSpiel bare action list. Prints ``<id> <token>``; the exit status
    (module)."""
    out, err = out or sys.stdout, err or sys.stderr
    width = height = None
    if size is not None:
        w, _, h = size.lower().partition("x")
        if not (w.isdigit() and h.isdigit()):
            print(f"boxfish import: --size is WxH (boxes), not {size!r}", file=err)
            return 2
        width, height = int(w), int(h)
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as f:
                text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        print(f"boxfish import: cannot read {path}: {exc}", file=err)
        return 1
    try:
        with Client(url) as api:
            game = api.import_record(text, format=format, width=width, height=height)
    except BoxfishError as exc:
        return _refused("import", exc, err)
    print(f"{game.id} {game.token}", file=out)
    return 0
