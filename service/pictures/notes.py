"""What the pictures say in words beneath the board, shared by both games: the analysis line
(with what is proven about an estimate), the legend, which moves carry a value label, and the
wrapping of these lines to the picture's width."""

from __future__ import annotations

import textwrap

from boxfish.engine.text import XTTT_NAMES, format_move, format_proven, format_value

#: ``?labels=``: ``best`` labels the best few moves and the moves proven worse than another
#: (the default), ``all`` every analysed move.
LABELS = ("best", "all")
#: How many of the best moves ``best`` labels (and every move tied with the best).
TOP = 3
#: A prose text's advance per character, in ems: above the average over the legend's
#: sentences in Pillow's default font (0.44), Helvetica and Arial (about 0.5) and DejaVu Sans
#: (0.52, a browser's usual fallback), so a wrapped line stays within the picture.
PROSE_EM = 0.54


def wrap(text: str, width: float, size: float) -> list[str]:
    """``text`` broken at spaces into lines of at most ``width`` units in a font of ``size``
    units (estimated at :data:`PROSE_EM` ems a character); a word longer than a line stays
    whole."""
    chars = max(8, int(width / (PROSE_EM * size)))
    return textwrap.wrap(text, chars, break_long_words=False, break_on_hyphens=False) or [""]


def analysis_line(result: dict) -> str:
    """The analysis in one line: its best move and value, with what the value is (``exact``,
    ``lower``, ``upper``, ``estimate``) and what is proven beyond it, as ``board.txt`` says it
    (``best 3,4,2 · value ~+3 (estimate; proven >=+1)``)."""
    if result.get("best_move") is None:
        return "analysis: game over"
    what = "exact" if result["exact"] else result["bound"]
    return (f"best {format_move(result['best_move'])} \u00b7 value "
            f"{format_value(result['value'], result['exact'], result['bound'])} "
            f"({what}{format_proven(result)})")


def proven_upper(mv: dict):
    """The proven upper bound of a move's value (its value when exact), or None."""
    if mv.get("exact"):
        return mv["value"]
    hi = mv.get("upper")
    return mv["value"] if hi is None and mv.get("bound") == "upper" else hi


def proven_lower(mv: dict):
    """The proven lower bound of a move's value (its value when exact), or None."""
    if mv.get("exact"):
        return mv["value"]
    lo = mv.get("lower")
    return mv["value"] if lo is None and mv.get("bound") == "lower" else lo


def labelled_moves(result: dict, labels: str = "best") -> list[dict]:
    """The analysed moves that carry a value label, in the result's order. ``all``: every
    one. ``best``: the :data:`TOP` best by value (an upper bound alone, ``<=``, says nothing
    of how good a move is: those rank after every other; at equal values the better proven
    first), every move proven as good as the top value (its proven lower bound at least
    that: proven ties), the result's best move, and every move proven worse than another
    (its proven upper bound below some move's proven lower bound): the moves that lose."""
    moves = result.get("moves") or []
    if labels == "all" or not moves:
        return list(moves)

    def rank(m):
        lo, hi = proven_lower(m), proven_upper(m)
        only_at_most = not m.get("exact") and m.get("bound") == "upper"
        return (only_at_most, -m["value"], lo is None, -(lo if lo is not None else 0),
                hi is not None)

    ranked = sorted(moves, key=rank)
    top = ranked[0]["value"]
    keep = {id(m) for m in ranked[:TOP]}
    keep.update(id(m) for m in moves if (lo := proven_lower(m)) is not None and lo >= top)
    best = result.get("best_move")
    keep.update(id(m) for m in moves if best is not None and list(m["move"]) == list(best))
    lowers = [v for v in map(proven_lower, moves) if v is not None]
    if lowers:
        floor = max(lowers)
        keep.update(id(m) for m in moves
                    if (hi := proven_upper(m)) is not None and hi < floor)
    return [m for m in moves if id(m) in keep]


def legend_lines(state, result: dict, shown: int, labels: str) -> list[str]:
    """The legend of an analysis picture: whose view the values take (the player to move),
    what each kind of label means, how many labels are left out (``shown`` of the result's
    moves carry one, under ``labels``), and how a move is written."""
    moves = len(result.get("moves") or [])
    if getattr(state.game, "name", "") == "extreme-tictactoe":
        who = XTTT_NAMES[state.to_move]
        out = [f"values for {who} (to move): the engine's evaluation, + good for {who}, "
               f"2500 about a point"]
    else:
        out = [f"values for player {state.to_move} (to move): boxes won minus boxes lost "
               f"from here on, with best play"]
    out.append("+3 exact \u00b7 >=+3 at least \u00b7 <=+3 at most (proven bounds) "
               "\u00b7 ~+3 an estimate")
    if labels == "best" and shown < moves:
        out.append(f"labelled: the best {TOP} (and proven ties) and the losing moves; "
                   f"{moves - shown} more with ?labels=all")
    return out


def coordinates_line(game_name: str) -> str:
    """How to read a move on the board's coordinates."""
    if game_name == "extreme-tictactoe":
        return "move row,col: row on the left, column at the top"
    return "move x,y,o: from the dot in column x, row y; o=1 right, o=2 down"


def judgement_line(entry: dict) -> tuple[str, str]:
    """A reviewed move in words and its judgement (``best``, ``inaccuracy``, ...): ``"12.
    player 0 3,4,2: mistake, loses 2 (value +2 then 0; best 1,2,1)"``. Values are for the
    player who moved (``~`` an estimate)."""
    judgement = entry.get("judgement") or "best"
    exact = bool(entry.get("exact"))
    before = format_value(entry["value_before"], exact, "estimate")
    played = format_value(entry["value_played"], exact, "estimate")
    loss = entry.get("loss") or 0
    loss_s = format_value(loss, exact, "estimate").replace("+", "")  # a loss: never < 0
    head = f"{entry['serial']}. {_player(entry)} {format_move(entry['move'])}: {judgement}"
    if judgement == "best" or not loss:
        return f"{head} (value {before})", judgement
    best = entry.get("best_moves") or []
    alt = f"; best {format_move(best[0])}" if best else ""
    return f"{head}, loses {loss_s} (value {before} then {played}{alt})", judgement


def _player(entry: dict) -> str:
    if isinstance(entry.get("move"), list | tuple) and len(entry["move"]) == 2:
        return XTTT_NAMES[entry["player"]]
    return f"player {entry['player']}"


def move_line(serial: int, player: int, move, game_name: str) -> str:
    """A move played, without a review: ``"12. player 0 3,4,2"`` (``X`` / ``O`` in Extreme
    Tic-Tac-Toe)."""
    who = XTTT_NAMES[player] if game_name == "extreme-tictactoe" else f"player {player}"
    return f"{serial}. {who} {format_move(move)}"


#: A text line beneath the board: its text and style classes.
Note = tuple[str, tuple[str, ...]]


def place_notes(scene, notes: list[Note], top: float, pad: float = 0.2) -> float:
    """Draw ``notes`` one beneath the other from ``top`` (units), centred, each wrapped to the
    scene's width less ``pad`` on either side; the bottom of the last line, plus ``pad``.
    A line's height is 1.7 times its font size."""
    from .scene import Prim, style_of

    y = top
    for text, classes in notes:
        size = style_of(Prim("text", tuple(classes), 0, 0)).get("size", 0.3)
        for part in wrap(text, scene.width - 2 * pad, size):
            step = 1.7 * size
            scene.text(classes, scene.width / 2, y + step / 2, part)
            y += step
    return y + pad
