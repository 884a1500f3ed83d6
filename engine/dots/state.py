"""The Dots-and-Boxes position: drawn lines as an int bitboard, box valences, and the kept
structures (the move index: per line, the serial that drew it; opportunities and pitfalls, the
chain state and the undo stack).

Two ways in, the same in both games (see :mod:`engine.game`): ``play(move)`` checks its input
and raises :class:`~engine.errors.IllegalMove`; ``play_unchecked(action)`` takes a line id (the
OpenSpiel action id, what ``DotsGame.move_to_action`` returns) and checks nothing (for search
and bulk replay of trusted data). ``undo`` and ``undo_unchecked`` are the exact inverse of
either.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import IllegalMove
from ..game import Move, Played, State
from .chains import ChainState, ChainTracker, Phase, decompose
from .geometry import HORIZONTAL, VERTICAL, bits

# the phases as plain globals: ``play_unchecked`` compares with them, and a global is read
# several times faster than an attribute of the enum class
_START, _MIDDLE, _END = Phase.START, Phase.MIDDLE, Phase.END


@dataclass(frozen=True, slots=True)
class Opportunity:
    """A line that completes ``boxes`` (1 or 2) boxes now; ``rank``: how many boxes the mover
    can take in a row starting with it (its opportunity rank)."""

    move: Move
    boxes: int
    rank: int

    def to_dict(self) -> dict:
        return {"move": list(self.move), "boxes": self.boxes, "rank": self.rank}


class DotsState(State):
    """A mutable Dots-and-Boxes position. See the module docstring for the two ways in."""

    __slots__ = ("game", "_geo", "_drawn", "_val", "_v2", "_v3", "_owner", "_scores",
                 "_to_move", "_serial", "_stack", "_line_serial", "_chains", "_phase",
                 "_base")

    def __init__(self, game) -> None:
        geo = game.geometry
        self.game = game
        self._geo = geo
        self._drawn = 0
        self._val = [0] * geo.num_boxes
        self._v2 = 0          # bits of boxes with valence 2 (kept as moves are played)
        self._v3 = 0          # bits of boxes with valence 3: each one is an opportunity
        self._owner = [-1] * geo.num_boxes
        self._scores = [0, 0]
        self._to_move = 0
        self._serial = 0
        self._base = 0        # serial of the loaded position (from_lines): undo stops there
        # undo stack: (line, completed, player, phase before the move)
        self._stack: list[tuple[int, int, int, Phase]] = []
        # the move index, flat: line id -> serial of the move that drew it (0: undrawn, or
        # drawn in a loaded position; ``_drawn`` tells which), so that ``copy`` is a list slice
        self._line_serial = [0] * geo.num_lines
        self._chains = ChainTracker(geo)
        self._phase = _START

    @classmethod
    def from_lines(cls, game, lines: str, to_move: int = 0, scores=(0, 0)) -> DotsState:
        """A state of ``game`` from an OpenSpiel line string (one '0'/'1' per action id).

        The string says nothing about who took which box: ``scores`` may account for at most
        the completed boxes; ``serial`` becomes the number of drawn lines, the move index
        gives them serial 0, and ``undo`` cannot go back past this position. Raises
        ``ValueError`` for a string of the wrong length or characters, a bad ``to_move`` or
        impossible scores.
        """
        geo = game.geometry
        if not isinstance(lines, str) or len(lines) != geo.num_lines or set(lines) - {"0", "1"}:
            raise ValueError(f"a line string for {geo.width}x{geo.height} is "
                             f"{geo.num_lines} characters of '0'/'1', got {lines!r}")
        if to_move not in (0, 1) or type(to_move) is not int:
            raise ValueError(f"to_move must be 0 or 1, got {to_move!r}")
        try:
            s0, s1 = scores
        except (TypeError, ValueError):
            raise ValueError(f"scores must be a pair of ints, got {scores!r}") from None
        if type(s0) is not int or type(s1) is not int or s0 < 0 or s1 < 0:
            raise ValueError(f"scores must be non-negative ints, got {scores!r}")
        state = cls(game)
        state._load(lines, to_move, s0, s1)
        return state

    def _load(self, lines: str, to_move: int, s0: int, s1: int) -> None:
        """Draw ``lines`` (checked by ``from_lines``) on this new state and make the result
        the loaded position: no history, no owners, the given scores and player to move."""
        for line, ch in enumerate(lines):
            if ch == "1":
                self.play_unchecked(line)
        done = sum(1 for v in self._val if v == 4)
        if s0 + s1 > done:
            raise ValueError(f"scores {(s0, s1)!r} exceed the {done} completed boxes")
        self._line_serial = [0] * self._geo.num_lines
        self._stack.clear()
        self._owner = [-1] * self._geo.num_boxes
        self._scores = [s0, s1]
        self._to_move = to_move
        self._base = self._serial

    # ----------------------------------------------------------------- observables
    @property
    def serial(self) -> int:
        return self._serial

    @property
    def to_move(self) -> int:
        return self._to_move

    @property
    def scores(self) -> tuple[int, int]:
        return (self._scores[0], self._scores[1])

    @property
    def drawn(self) -> int:
        """Bitmask of drawn lines: bit i set = line (OpenSpiel action) i is drawn."""
        return self._drawn

    @property
    def phase(self) -> Phase:
        """The phase: ``start`` until boxes have been taken and no capture is left on the
        board, then ``middle``, and ``end`` from the move after that on."""
        return self._phase

    @property
    def history(self) -> list[Move]:
        moves = self._geo.moves
        return [moves[entry[0]] for entry in self._stack]

    def valence(self, x: int, y: int) -> int:
        """Drawn lines around the box whose top-left dot is ``(x, y)``."""
        return self._val[(y - 1) * self._geo.width + (x - 1)]

    def owner(self, x: int, y: int) -> int:
        """Who took the box at ``(x, y)``: 0, 1, or -1 (not taken, or taken before a
        ``from_lines`` position)."""
        return self._owner[(y - 1) * self._geo.width + (x - 1)]

    def is_terminal(self) -> bool:
        return self._drawn == self._geo.all_lines

    def result(self) -> dict | None:
        if not self.is_terminal():
            return None
        s0, s1 = self._scores
        winner = 0 if s0 > s1 else 1 if s1 > s0 else None
        return {"winner": winner, "points": [s0, s1]}

    def legal_actions(self) -> list[int]:
        """The undrawn lines' ids (OpenSpiel action ids), ascending."""
        return bits(self._geo.all_lines & ~self._drawn)

    def legal_moves(self) -> list[Move]:
        """The undrawn lines as moves ``(x, y, o)``, in action-id order."""
        moves = self._geo.moves
        return [moves[ln] for ln in self.legal_actions()]

    def to_lines(self) -> str:
        """OpenSpiel's line string: one '0'/'1' per action id."""
        n = self._geo.num_lines
        return format(self._drawn, f"0{n}b")[::-1] if n else ""

    def index(self) -> dict:
        """The move index x -> y -> orientation -> serial of the move that drew the line
        (a new dict: changing it changes nothing). Lines of a ``from_lines`` position carry 0.
        Keys are in the order their lines were drawn (the loaded lines first, by line id)."""
        serials = self._line_serial
        moves = self._geo.moves
        out: dict[int, dict[int, dict[int, int]]] = {}
        for line in sorted(bits(self._drawn), key=lambda ln: serials[ln]):  # stable: by id
            x, y, o = moves[line]
            ys = out.get(x)
            if ys is None:
                ys = out[x] = {}
            os_ = ys.get(y)
            if os_ is None:
                os_ = ys[y] = {}
            os_[o] = serials[line]
        return out

    # ------------------------------------------------------------------ play / undo
    def check(self, move) -> int:
        """The line id of ``move`` (a move ``(x, y, o)``) when it can be drawn here; raises
        IllegalMove (``malformed``, ``game_over``, ``out_of_range``, ``already_drawn``)."""
        try:
            x, y, o = move
        except (TypeError, ValueError):
            raise IllegalMove("malformed", move, "a move is three ints [x, y, o]") from None
        if type(x) is not int or type(y) is not int or type(o) is not int:
            raise IllegalMove("malformed", move, "a move is three ints [x, y, o]")
        if o != HORIZONTAL and o != VERTICAL:
            raise IllegalMove("malformed", move, "orientation must be 1 (horizontal) or 2 "
                              "(vertical)")
        if self.is_terminal():
            raise IllegalMove("game_over", move, "every line is drawn")
        geo = self._geo
        if not geo.in_range(x, y, o):
            raise IllegalMove("out_of_range", move,
                              f"no such line on a {geo.width}x{geo.height} board")
        line = geo.line_id(x, y, o)
        if (self._drawn >> line) & 1:
            serial = self._line_serial[line]
            by = f"by move {serial}" if serial else "in the loaded position"
            raise IllegalMove("already_drawn", move, f"drawn {by}")
        return line

    def play(self, move) -> Played:
        """Draw ``move`` ``(x, y, o)``; raises IllegalMove (and changes nothing) if it can't."""
        line = self.check(move)
        player = self._to_move
        completed = self.play_unchecked(line)
        return Played(self._serial, self._geo.moves[line], player, completed,
                      self._to_move != player)

    def play_unchecked(self, line: int) -> int:
        """Draw line id ``line`` (an undrawn line's OpenSpiel action id) WITHOUT checks;
        return the boxes it completed (0, 1 or 2)."""
        geo = self._geo
        self._drawn |= 1 << line
        val = self._val
        player = self._to_move
        completed = 0
        for b in geo.line_boxes[line]:
            v = val[b] + 1
            val[b] = v
            if v == 2:
                self._v2 |= 1 << b
            elif v == 3:
                self._v2 ^= 1 << b
                self._v3 |= 1 << b
            elif v == 4:
                self._v3 ^= 1 << b
                self._owner[b] = player
                completed += 1
        self._chains.dirty |= geo.line_box_mask[line]
        phase = self._phase
        self._stack.append((line, completed, player, phase))
        self._line_serial[line] = self._serial = self._serial + 1
        if completed:
            self._scores[player] += completed
        else:
            self._to_move = 1 - player
        if phase is _START:
            if completed and not self._v3:
                self._phase = _MIDDLE
        elif phase is _MIDDLE:
            self._phase = _END
        return completed

    def undo(self) -> Move:
        """Take back the last move (the exact inverse of ``play``) and return it.

        Raises ``IndexError`` when no move was played since the start (or since ``from_lines``).
        """
        if not self._stack:
            raise IndexError("no move to undo")
        return self._geo.moves[self.undo_unchecked()]

    def undo_unchecked(self) -> int:
        """Take back the last move WITHOUT checking there is one; return its line id."""
        line, completed, player, phase = self._stack.pop()
        geo = self._geo
        self._drawn ^= 1 << line
        val = self._val
        for b in geo.line_boxes[line]:
            v = val[b]
            val[b] = v - 1
            if v == 2:
                self._v2 ^= 1 << b
            elif v == 3:
                self._v3 ^= 1 << b
                self._v2 |= 1 << b
            elif v == 4:
                self._v3 |= 1 << b
                self._owner[b] = -1
        self._chains.dirty |= geo.line_box_mask[line]
        self._serial -= 1
        self._line_serial[line] = 0
        self._scores[player] -= completed
        self._to_move = player
        self._phase = phase
        return line

    def copy(self) -> DotsState:
        other = DotsState.__new__(DotsState)
        other.game = self.game
        other._geo = self._geo
        other._drawn = self._drawn
        other._val = self._val[:]
        other._v2 = self._v2
        other._v3 = self._v3
        other._owner = self._owner[:]
        other._scores = self._scores[:]
        other._to_move = self._to_move
        other._serial = self._serial
        other._base = self._base
        other._stack = self._stack[:]
        other._line_serial = self._line_serial[:]
        other._chains = self._chains.copy()
        other._phase = self._phase
        return other

    # --------------------------------------------------------- opportunities, pitfalls
    def _missing_line(self, box: int) -> int:
        return (self._geo.box_mask[box] & ~self._drawn).bit_length() - 1

    def _opportunity_lines(self) -> dict[int, int]:
        """line -> boxes it completes now, from the kept set of valence-3 boxes."""
        out: dict[int, int] = {}
        v3 = self._v3
        while v3:
            low = v3 & -v3
            v3 ^= low
            line = self._missing_line(low.bit_length() - 1)
            out[line] = out.get(line, 0) + 1
        return out

    def opportunity_rank(self, move) -> int:
        """Boxes the mover can take in a row starting with ``move`` (0 if it completes none).
        Changes nothing: the captures are played out on a scratch copy."""
        line = self.check(move)
        return self.copy()._rank(line)

    def _rank(self, line: int) -> int:
        """Play ``line`` and the captures that follow, then undo them. Mutates ``self`` while
        it runs: call it on a scratch copy only (readers may share a state between threads)."""
        taken = self.play_unchecked(line)
        if not taken:
            self.undo_unchecked()
            return 0
        played = 1
        while self._v3:
            taken += self.play_unchecked(
                self._missing_line((self._v3 & -self._v3).bit_length() - 1))
            played += 1
        for _ in range(played):
            self.undo_unchecked()
        return taken

    def opportunities(self) -> list[Opportunity]:
        """Every line that completes a box now, with its box count and opportunity rank,
        in line-id order. Changes nothing (ranks are found on a scratch copy)."""
        moves = self._geo.moves
        lines = sorted(self._opportunity_lines().items())
        if not lines:
            return []
        scratch = self.copy()
        return [Opportunity(moves[ln], n, scratch._rank(ln)) for ln, n in lines]

    def pitfall_rank(self, move) -> int:
        """How many boxes drawing ``move`` hands to the opponent: the number of boxes it would
        bring to valence 3, for a line that completes no box (else 0). 0 means safe."""
        return self._pitfall_rank(self.check(move))

    def _pitfall_rank(self, line: int) -> int:
        mask = self._geo.line_box_mask[line]
        if mask & self._v3:
            return 0
        return (mask & self._v2).bit_count()

    def pitfalls(self) -> dict[Move, int]:
        """Undrawn lines that hand boxes over: move -> rank (1 or 2), in line-id order.
        Lines not listed (and not opportunities) are safe."""
        geo = self._geo
        candidates = set()
        v2 = self._v2
        while v2:
            low = v2 & -v2
            v2 ^= low
            free = geo.box_mask[low.bit_length() - 1] & ~self._drawn
            while free:
                lb = free & -free
                free ^= lb
                candidates.add(lb.bit_length() - 1)
        out = {}
        for line in sorted(candidates):
            rank = self._pitfall_rank(line)
            if rank:
                out[geo.moves[line]] = rank
        return out

    def safe_moves(self) -> list[Move]:
        """Undrawn lines that neither complete a box nor hand one over (pitfall rank 0)."""
        geo = self._geo
        return [geo.moves[ln] for ln in self.legal_actions()
                if not geo.line_box_mask[ln] & (self._v2 | self._v3)]

    # ------------------------------------------------------------------ the chain state
    def chains(self) -> ChainState:
        """Valences, the chains and loops with their kind and length, which chain each box is
        in, and the phase. Only the chains the moves since the last call touched are rebuilt.

        Safe for readers sharing the state between threads: the rebuild works on a copy of
        the kept chains, published whole when it is done (a kept tracker is never changed
        once another thread may read it)."""
        tracker = self._chains
        if tracker.dirty:
            tracker = tracker.copy()
            tracker.sync(self._drawn, self._val)
            self._chains = tracker
        return tracker.snapshot(self._val, self._phase)

    def chains_from_scratch(self) -> ChainState:
        """The same as :meth:`chains`, computed with no kept state (a reference for tests)."""
        fresh = ChainTracker(self._geo)
        fresh.sync(self._drawn, self._val)
        assert fresh.chains == decompose(self._geo, self._drawn, self._val)
        return fresh.snapshot(self._val, self._phase)

    # ------------------------------------------------------------------ presentation
    def to_dict(self) -> dict:
        geo = self._geo
        return {
            "game": self.game.name,
            "width": geo.width,
            "height": geo.height,
            "serial": self._serial,
            "to_move": self._to_move,
            "scores": list(self._scores),
            "status": self.status(),
            "result": self.result(),
            "lines": self.to_lines(),
            "legal_moves": [list(m) for m in self.legal_moves()],
            "opportunities": [op.to_dict() for op in self.opportunities()],
            "pitfalls": [{"move": list(m), "rank": r} for m, r in self.pitfalls().items()],
            "chains": self.chains().to_dict(),
        }

    def to_ascii(self) -> str:
        """The board as text: dots '+', lines '-' and '|', taken boxes '0' / '1'."""
        geo = self._geo
        w, h = geo.width, geo.height
        d = self._drawn
        rows = []
        for r in range(h + 1):
            rows.append("+" + "+".join("---" if (d >> (r * w + c)) & 1 else "   "
                                       for c in range(w)) + "+")
            if r == h:
                break
            cells = []
            for c in range(w + 1):
                cells.append("|" if (d >> (geo.num_horizontal + r * (w + 1) + c)) & 1 else " ")
                if c < w:
                    owner = self._owner[r * w + c]
                    cells.append(f" {owner} " if owner >= 0 else "   ")
            rows.append("".join(cells))
        return "\n".join(rows)

    def __eq__(self, other: object) -> bool:
        """Same game, lines, scores, player to move and move history."""
        return (isinstance(other, DotsState) and other.game == self.game
                and other._drawn == self._drawn and other._scores == self._scores
                and other._to_move == self._to_move and other._stack == self._stack)

    __hash__ = None  # mutable

    def __repr__(self) -> str:
        g = self._geo
        return (f"<DotsState {g.width}x{g.height} serial={self._serial} "
                f"to_move={self._to_move} scores={tuple(self._scores)} lines={self.to_lines()!r}>")
