"""The opening explorer: for a position of the first moves of a game (Dots and Boxes or
Extreme Tic-Tac-Toe, per board size), the moves played from it in finished games, with how
many games each was played in, the wins of each seat, the draws, the mean final margin and a
few example games (see docs/explorer.md).

It is a projection (:mod:`service.application.projections`): :class:`ExplorerProjection` says
what a finished game contributes; :class:`Explorer` answers queries from the version the
pointer names. Positions are folded under the board's symmetries: a position is named by its
canonical form (Dots and Boxes: ``Tables.canonical`` of the drawn lines, with the side to
move and the scores; Extreme Tic-Tac-Toe: the smallest image of its marks and last move under
the square's 8 symmetries, with the side to move and the bonus flag), and a move by its
image in the canonical frame, the smallest over the symmetries that fix the canonical
position. An answer shows each move in the querying position's orientation.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from boxfish.engine import load_game
from boxfish.engine.dots.search.board import tables
from boxfish.engine.xttt.symmetry import CELL_SYM
from boxfish.engine.xttt.tables import BLOCK_CELLS

from ..store.events import MoveEvent
from ..store.game_meta import GameMeta
from ..store.projections import Changes, ProjectionStore
from .projections import POINTER_TTL_S, Projection

NAME = "explorer"
#: Bump when what a game contributes changes: the runner then rebuilds the explorer.
SCHEMA = 1
DOTS = "dots-and-boxes"
XTTT = "extreme-tictactoe"

#: The inverse of each of Extreme Tic-Tac-Toe's symmetries (``CELL_SYM``).
_XTTT_INV = tuple(tuple(sorted(range(256), key=lambda i, k=k: CELL_SYM[k][i]))
                  for k in range(8))

#: The statistics kept per move of a position, as the bucket's field suffixes: games, wins
#: of seat 0 and 1, draws, the sum of the final margins (seat 0's points less seat 1's), the
#: example games.
GAMES, WIN0, WIN1, DRAWS, MARGIN, EXAMPLES = "n", "w0", "w1", "d", "m", "x"


@dataclass(frozen=True, slots=True)
class Fold:
    """A position folded: its name, and the maps of a move (action id) between the
    position's frame and the canonical frame."""

    key: str
    to_canonical: Callable[[int], int]
    from_canonical: Callable[[int], int]


def _fold_dots(state) -> Fold:
    t = tables(state.game.width, state.game.height)
    c, s = t.canonical(state.drawn)
    syms, inv = t.syms, t.inv
    stab = [k for k in range(1, len(syms)) if t.permute(c, k) == c]
    scores = state.scores
    key = f"{c:x}.{state.to_move}.{scores[0]}.{scores[1]}"

    def to_canonical(a: int) -> int:
        m = syms[s][a]
        return min([m, *(syms[k][m] for k in stab)])

    return Fold(key, to_canonical, lambda m: inv[s][m] if s else m)


def _xttt_image(marks: list[tuple[int, int]], last: int, k: int) -> tuple:
    sym = CELL_SYM[k]
    return tuple(sorted((sym[c], p) for c, p in marks)), sym[last] if last >= 0 else -1


def _fold_xttt(state) -> Fold:
    marks = [(BLOCK_CELLS[b][loc], p) for p in (0, 1) for b in range(16)
             for loc in range(16) if state.marks[p][b] >> loc & 1]
    images = [_xttt_image(marks, state.last_action, k) for k in range(8)]
    best = min(images)
    s = images.index(best)
    stab = [k for k in range(1, 8) if _xttt_image(list(best[0]), best[1], k) == best]
    digest = hashlib.sha1(repr((best, state.to_move, state.in_bonus)).encode()).hexdigest()

    def to_canonical(a: int) -> int:
        m = CELL_SYM[s][a]
        return min([m, *(CELL_SYM[k][m] for k in stab)])

    return Fold(digest[:16], to_canonical, lambda m: _XTTT_INV[s][m])


def fold(state) -> Fold:
    """The folded form of an engine state of either game."""
    return _fold_dots(state) if state.game.name == DOTS else _fold_xttt(state)


def board_name(game: str, params: dict) -> str:
    """The explorer's name of a game and board size: ``dots-and-boxes:5x5``,
    ``extreme-tictactoe``."""
    if game == DOTS:
        return f"{DOTS}:{params['width']}x{params['height']}"
    return game


def bucket_name(board: str, key: str) -> str:
    return f"{board}:{key}"


class ExplorerProjection(Projection):
    """A finished game contributes, for each of its first ``max_moves`` positions, its move
    from there: one game, its outcome (a win of seat 0 or 1, or a draw), its final margin
    (seat 0's points less seat 1's) and its id among the examples."""

    name = NAME

    def __init__(self, max_moves: int = 12, sample_cap: int = 5) -> None:
        self.max_moves = max_moves
        self.sample_cap = sample_cap

    @property
    def schema(self) -> str:
        return f"{SCHEMA}.{self.max_moves}"

    def source(self, game_id: str, meta: GameMeta, events: list[MoveEvent]) -> str | None:
        """``{"g", "p", "a" (the first moves' action ids), "w" (the winner, null for a
        draw), "mg" (the final margin)}``; None when the game is not over."""
        game = load_game(meta.game, **meta.params)
        state = game.new_state()
        actions = [game.move_to_action(e.move) for e in events]
        for a in actions:
            state.play_unchecked(a)
        result = state.result()
        if result is None:
            return None
        points = result["points"]
        return json.dumps({"g": meta.game, "p": meta.params, "a": actions[:self.max_moves],
                           "w": result["winner"], "mg": points[0] - points[1]},
                          sort_keys=True, separators=(",", ":"))

    def changes(self, game_id: str, source: str) -> Changes:
        d = json.loads(source)
        game = load_game(d["g"], **d["p"])
        board = board_name(d["g"], d["p"])
        outcome = DRAWS if d["w"] is None else (WIN0 if d["w"] == 0 else WIN1)
        counts: dict[tuple[str, str], int] = defaultdict(int)
        samples: dict[tuple[str, str, str], bool] = {}
        state = game.new_state()
        for a in d["a"]:
            f = fold(state)
            bucket = bucket_name(board, f.key)
            m = f.to_canonical(a)
            counts[(bucket, f"{m}:{GAMES}")] += 1
            counts[(bucket, f"{m}:{outcome}")] += 1
            counts[(bucket, f"{m}:{MARGIN}")] += d["mg"]
            samples[(bucket, f"{m}:{EXAMPLES}", game_id)] = True
            state.play_unchecked(a)
        return Changes(dict(counts), samples)


class Explorer:
    """Answers the explorer's queries from the version of the projection that its pointer
    names (read at most every :data:`POINTER_TTL_S`: the one cache here, of one value)."""

    def __init__(self, store: ProjectionStore, projection: ExplorerProjection,
                 pointer_ttl_s: float = POINTER_TTL_S) -> None:
        self.store = store
        self.projection = projection
        self.pointer_ttl_s = pointer_ttl_s
        self._lock = threading.Lock()
        self._pointer: tuple[float, int | None] = (0.0, None)

    @property
    def max_moves(self) -> int:
        return self.projection.max_moves

    def version(self) -> int | None:
        """The version readers read now (None: none built yet)."""
        now = time.monotonic()
        with self._lock:
            expires, version = self._pointer
        if now < expires:
            return version
        version = self.store.versions(NAME).current
        with self._lock:
            self._pointer = (now + self.pointer_ttl_s, version)
        return version

    def query(self, state) -> dict:
        """The moves played from ``state`` (an engine state reached from the start), in its
        orientation, most played first: ``{"version", "games", "moves": [{"move", "games",
        "wins": [seat 0, seat 1], "draws", "mean_margin", "examples"}]}``."""
        game = state.game
        version = self.version()
        out = {"version": version, "games": 0, "moves": []}
        if version is None or state.serial >= self.max_moves or state.is_terminal():
            return out
        f = fold(state)
        raw = self.store.bucket(NAME, version, bucket_name(board_name(game.name,
                                                                      game.params()), f.key))
        stats: dict[int, dict[str, str]] = defaultdict(dict)
        for name, value in raw.items():
            m, _, stat = name.partition(":")
            stats[int(m)][stat] = value
        moves = []
        for m, st in stats.items():
            n = int(st.get(GAMES, 0))
            if n <= 0:
                continue
            moves.append({"move": list(game.action_to_move(f.from_canonical(m))), "games": n,
                          "wins": [int(st.get(WIN0, 0)), int(st.get(WIN1, 0))],
                          "draws": int(st.get(DRAWS, 0)),
                          "mean_margin": round(int(st.get(MARGIN, 0)) / n, 3),
                          "examples": st[EXAMPLES].split(",") if st.get(EXAMPLES) else []})
        moves.sort(key=lambda x: (-x["games"], x["move"]))
        out["games"] = sum(x["games"] for x in moves)
        out["moves"] = moves
        return out
