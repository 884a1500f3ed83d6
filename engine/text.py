"""The text rendering of a position and of an analysis: what ``boxfish analyse`` prints and
what the service's ``board.txt`` answers (one function each, so both show the same text).

An analysis is given as its JSON form (``Analysis.to_dict()``, what an analysis job stores), so
a stored result renders exactly as a fresh one.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType


def format_move(move: Sequence[int] | None) -> str:
    """``"x,y,o"`` / ``"r,c"`` for a move, ``"-"`` for None."""
    return ",".join(str(v) for v in move) if move is not None else "-"


def format_value(value: float, exact: bool, bound: str) -> str:
    """A value with its sign: ``+3`` when exact, ``>=+3`` for a lower bound, ``<=+3`` for an
    upper bound, ``~+3`` for an estimate (floats with two decimals); an integer 0 has no sign
    (``0``, ``>=0``)."""
    if isinstance(value, int):
        s = f"{value:+d}" if value else "0"
    else:
        s = f"{value:+.2f}"
    if exact:
        return s
    return {"upper": f"<={s}", "lower": f">={s}"}.get(str(bound), f"~{s}")


#: The players' names in Extreme Tic-Tac-Toe's status (player 0 is X).
XTTT_NAMES = ("X", "O")


def status_lines(state) -> list[str]:
    """The status of a position, the same words in ``board.txt`` (and ``boxfish analyse``),
    the SVG and the PNG: the score and whose turn, or, once the game is over, its result
    (``game over · player 1 wins 3-6``); an Extreme Tic-Tac-Toe bonus move on a line of its
    own."""
    s0, s1 = state.scores
    result = state.result()
    if getattr(state.game, "name", None) == "extreme-tictactoe":
        names = XTTT_NAMES
        if result is None:
            lines = [f"blocks X {s0} - O {s1} \u00b7 {names[state.to_move]} to move"]
            if state.in_bonus:
                lines.append(f"bonus move: {names[state.to_move]} moves again")
            return lines
        points = result["points"]
        if state.ending == "pattern":
            return [f"game over \u00b7 {names[result['winner']]} wins by a pattern"]
        if result["winner"] is None:
            return [f"game over \u00b7 all blocks decided \u00b7 draw {points[0]}-{points[1]}"]
        return [f"game over \u00b7 all blocks decided \u00b7 {names[result['winner']]} wins "
                f"{points[0]}-{points[1]}"]
    if result is None:
        return [f"score {s0}-{s1} \u00b7 player {state.to_move} to move"]
    if result["winner"] is None:
        return [f"game over \u00b7 draw {s0}-{s1}"]
    return [f"game over \u00b7 player {result['winner']} wins {s0}-{s1}"]


#: The games' names in words, for :func:`board_caption`.
GAME_TITLES = MappingProxyType({"dots-and-boxes": "Dots and Boxes",
                               "extreme-tictactoe": "Extreme Tic-Tac-Toe"})


def board_caption(state) -> str:
    """The position in words, the same in ``board.txt``, ``boxfish analyse`` and the pictures:
    the game, its size and how far it is (``Dots and Boxes, 5x5 boxes, 18 lines drawn``;
    ``Extreme Tic-Tac-Toe, 16x16 cells, 37 marks``). Whose turn and the score are
    :func:`status_lines`'."""
    game = state.game
    name = getattr(game, "name", "")
    title = GAME_TITLES.get(name, name or type(game).__name__)
    if name == "dots-and-boxes":
        geo = game.geometry
        drawn = bin(state.drawn).count("1")
        return (f"{title}, {geo.width}x{geo.height} boxes, {drawn} line"
                f"{'' if drawn == 1 else 's'} drawn")
    if name == "extreme-tictactoe":
        marks = sum(row.count("x") + row.count("o") for row in state.board())
        return f"{title}, 16x16 cells, {marks} mark{'' if marks == 1 else 's'}"
    return title


def position_text(game, state) -> str:
    """The board (``state.to_ascii()``) and a heading line: :func:`board_caption` and
    :func:`status_lines` (the score and the player to move, or the result), as the pictures
    say them, two spaces apart."""
    out = [state.to_ascii() if hasattr(state, "to_ascii") else str(state)]
    out.append(f"{board_caption(state)}  " + " \u00b7 ".join(status_lines(state)))
    return "\n".join(out)


def format_proven(result: dict) -> str:
    """What is proven about an inexact value (``lower`` / ``upper`` of an analysis or of one
    of its moves): ``"; proven >=+1 <=+3"``, ``"; proven >=+1"``, or ``""`` when nothing
    beyond ``bound`` itself is proven (or the value is exact)."""
    if result.get("exact"):
        return ""
    parts = []
    lo, hi = result.get("lower"), result.get("upper")
    if lo is not None and not (result.get("bound") == "lower" and lo == result["value"]):
        parts.append(f">={format_value(lo, True, 'exact')}")
    if hi is not None and not (result.get("bound") == "upper" and hi == result["value"]):
        parts.append(f"<={format_value(hi, True, 'exact')}")
    return "; proven " + " ".join(parts) if parts else ""


def analysis_lines(result: dict, stats: bool = True) -> list[str]:
    """The lines describing an analysis ``result`` (``Analysis.to_dict()``): best move and
    value, proof, the search's statistics (with ``stats``: they depend on the machine and the
    time taken), the principal variation and every analysed move with its value."""
    if result["best_move"] is None:
        return ["game over"]
    out = []
    what = "exact" if result["exact"] else result["bound"]
    out.append(f"best move  {format_move(result['best_move'])}   value "
               f"{format_value(result['value'], result['exact'], result['bound'])} ({what}"
               f"{format_proven(result)})")
    if result.get("proven"):
        out.append(f"proven     {result['proven']}")
    if result.get("mate_in") is not None:
        out.append(f"mate in    {result['mate_in']:+d} plies (+: the side to move wins)")
    if stats:
        out.append(f"depth {result['depth']}  nodes {result['nodes']}  nps {result['nps']}  "
                   f"time {result['time_ms']:.0f} ms  tt hits {result['tt_hits']}  "
                   f"core {result['core']}")
    if result.get("pv"):
        out.append("pv         " + " ".join(format_move(m) for m in result["pv"][:16]))
    out.append("moves:")
    for i, mv in enumerate(result.get("moves") or []):
        mate = mv.get("mate_in")
        proven = format_proven(mv)
        out.append(f"  {i + 1:>3}. {format_move(mv['move']):<10} "
                   f"{format_value(mv['value'], mv['exact'], mv['bound']):>7}"
                   f"{'' if mv['exact'] else '  (' + mv['bound'] + proven + ')'}"
                   f"{'' if mate is None else f'  mate {mate:+d}'}")
    return out


def analysis_text(game, state, result: dict, stats: bool = True) -> str:
    """:func:`position_text` followed by :func:`analysis_lines`: the whole of what
    ``boxfish analyse`` prints (without ``--json``)."""
    return "\n".join([position_text(game, state), *analysis_lines(result, stats)])


__all__ = ["format_move", "format_value", "format_proven", "status_lines", "board_caption",
           "position_text",
           "analysis_lines", "analysis_text"]
