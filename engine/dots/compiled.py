"""The compiled core of the Dots-and-Boxes search: the same search as :mod:`search_core`.

``_core`` (built from ``_core.c`` by ``pip install``) runs :class:`search_core.Searcher`'s
negamax node for node: the same move ordering, captures, keys, table semantics, chain DP and
evaluation, so both report the same value, bound, best move and node count as long as
neither transposition table has had to replace an entry. It takes boards of up to
``MAX_LINES`` lines; larger boards, and machines where the extension could not be built, use
the Python search (``available()``, ``fits(tables)``, ``UNAVAILABLE_REASON``).
"""

from __future__ import annotations

import time

from ..search import SearchAborted
from . import evaluate
from .search_board import Tables
from .search_core import Searcher

try:
    from . import _core
except ImportError as exc:  # pragma: no cover - depends on the build
    _core = None
    UNAVAILABLE_REASON: str | None = f"the compiled core was not built ({exc})"
else:
    UNAVAILABLE_REASON = None

#: Lines (and boxes) of the largest board the compiled core takes.
MAX_LINES = 128
MAX_BOXES = 64
#: The table of a search that is given none (a fresh one per analysis).
DEFAULT_TABLE_BYTES = 64 << 20


def available() -> bool:
    """Whether the compiled core was built and imports."""
    return _core is not None


def fits(t: Tables) -> bool:
    """Whether the compiled core can search this board size."""
    return _core is not None and t.nl <= MAX_LINES and t.nb <= MAX_BOXES


def new_table(nbytes: int = DEFAULT_TABLE_BYTES, lines: int = MAX_LINES):
    """A compiled transposition table for boards of up to ``lines`` lines: at most ``nbytes``
    bytes of entries (a power of two of them: 16 bytes each for boards of up to 64 lines, 32
    beyond), plus the evaluation's memo caches (about 6 MB). Raises ``RuntimeError`` when the
    core is not available, ``ValueError`` below 1024 entries."""
    if _core is None:
        raise RuntimeError(UNAVAILABLE_REASON)
    return _core.Table(nbytes, lines > 64)


def board(t: Tables):
    """The compiled core's tables for ``t``'s board size (built from ``t``)."""
    if not fits(t):
        raise ValueError(f"the compiled core does not take a {t.w}x{t.h} board")
    swaps = [(a.bit_length() - 1, a.bit_length() - 1 + sh) for a, sh in t.kswap1]
    return _core.Board(t.nl, t.box_lines, t.syms, t.twin_groups, swaps, t.centrality,
                       t.fill_orders[:evaluate.FILLS],
                       (evaluate.TRUST_NUM, evaluate.TRUST_DEN),
                       (evaluate.PARITY_HORIZON, evaluate.PARITY_RAMP))


class CompiledSearcher(Searcher):
    """A :class:`search_core.Searcher` whose ``search`` is the compiled one.

    ``table``: a table from :func:`new_table` (default: a fresh one of
    ``DEFAULT_TABLE_BYTES``). The counters and limits live in the compiled core and are read
    and set through the usual attributes.
    """

    def __init__(self, t: Tables, table=None, symmetry: bool = True,
                 deadline: float | None = None, max_nodes: int | None = None,
                 compiled_board=None) -> None:
        self.core = None
        super().__init__(t, tt=table if table is not None else new_table(lines=t.nl),
                         symmetry=symmetry, deadline=deadline, max_nodes=max_nodes)
        self.core = _core.Core(compiled_board or board(t), self.tt, SearchAborted,
                               time.perf_counter, self.symmetry)
        self.core.deadline = deadline
        self.core.max_nodes = max_nodes
        self.core.etc_min_free = self.etc_min_free
        self.search = self.core.search

    def _build_search(self):
        return None

    def close(self) -> None:
        self.search = None

    def best_line(self, drawn: int) -> int:
        t = self.t
        key, s = t.key(drawn, self.symmetry)
        e = self.tt.get(key)
        if e is None or e[3] < 0:
            return -1
        return t.from_key_frame(drawn, e[3], s)


def _delegate(name: str) -> property:
    def get(self):
        core = self.core
        return self.__dict__.get(name) if core is None else getattr(core, name)

    def set(self, value):
        core = self.core
        if core is None:
            self.__dict__[name] = value
        else:
            setattr(core, name, value)
    return property(get, set)


for _name in ("nodes", "tt_hits", "horizon", "deadline", "max_nodes"):
    setattr(CompiledSearcher, _name, _delegate(_name))
