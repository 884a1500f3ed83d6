"""Game records: a text a person can read and a program can parse, for both games.

A record is PGN-like: ``[Key "Value"]`` headers, then the movetext, turn by turn::

    [Game "dots-and-boxes"]
    [Size "2x2"]
    [Result "0-1"]
    [Score "1-3"]

    1. 1,1,1 1... 2,1,1
    2. 1,3,1 2... 1,1,2 {value=-2 best=3,1,2}
    3. 3,1,2 3... 2,1,2+ 2,2,2+ 1,2,1+ 3,2,2+
    0-1

A move is written as the API's move without brackets and spaces, as ``boxfish analyse``
prints it (:func:`engine.text.format_move`): ``x,y,o`` in Dots and Boxes, ``row,col`` in
Extreme Tic-Tac-Toe. ``N.`` opens a turn of player 0 and ``N...`` one of player 1; a turn
holds every move its player makes before the other moves (a completed box, or a won block's
bonus move, lets the player go on), and a ``+`` after a move marks each box (block) it
completed. ``{...}`` is a comment on the move before it (before the first move: on the
game); its ``key=value`` words carry values (:func:`comment_values`). The grammar (EBNF) and
the headers are in ``docs/records.md``.

:func:`parse_record` reads a record; with ``check=True`` (the default) it replays every move
with the engine's rules, so a record it returns is a legal game whose turns, ``+`` marks,
``Result``, ``Score`` and ``Position`` agree with its moves. :func:`write_record` writes one
(replaying the moves, so what it writes parses back to the same moves and result).
:func:`parse_openspiel` reads OpenSpiel's Dots-and-Boxes action sequences. Every problem is a
:class:`~engine.errors.RecordError` naming the move number and the reason. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from .errors import IllegalMove, RecordError, UnknownGame
from .game import Game, Move, State, game_names, load_game

#: The most characters a record may have (a 20x20 Dots-and-Boxes game, 840 moves with
#: comments, is well within it).
MAX_RECORD_CHARS = 1 << 20

#: The headers the writer puts first, in this order; any other header follows.
HEADER_ORDER = ("Game", "Size", "Player0", "Player1", "Date", "Result", "Score", "Position")

RESULTS = ("1-0", "0-1", "1/2-1/2", "*")

_HEADER = re.compile(r'\[([A-Za-z][A-Za-z0-9_]*)[ \t]+"((?:[^"\\\n]|\\["\\])*)"\][ \t]*')
_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_SIZE = re.compile(r"([0-9]{1,2})x([0-9]{1,2})")
_SCORE = re.compile(r"([0-9]{1,4})-([0-9]{1,4})")
_POSITION = re.compile(r"([0-9]{1,19})(?:\.[0-9a-f]{16})?")
_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<comment>\{[^}]*\})
  | (?P<result>(?:1-0|0-1|1/2-1/2|\*)(?=\s|\{|$))
  | (?P<marker>[0-9]{1,9}\.(?:\.\.)?)
  | (?P<move>[0-9]{1,9}(?:,[0-9]{1,9})+)(?P<marks>\+*)(?=\s|\{|$)
""", re.VERBOSE)
_WORD = re.compile(r"\S+")
_ESCAPED = re.compile(r'\\(["\\])')
_VALUE_KEY = r"[A-Za-z_][A-Za-z0-9_]*"
_VALUE = re.compile(rf"({_VALUE_KEY})=(\S+)")


@dataclass
class Record:
    """A parsed record: the ``game`` (an engine Game), its ``headers`` as written (in order;
    ``Game`` and, for Dots and Boxes, ``Size`` always among them), the ``moves`` (tuples, as
    ``State.play`` takes them), the ``comments`` (move number -> the texts of the comments
    after that move, without braces; 0: before the first move) and ``state``, the position
    after the moves when the record was replayed (``check=True``), else None."""

    game: Game
    headers: dict[str, str]
    moves: list[Move]
    comments: dict[int, list[str]] = field(default_factory=dict)
    state: State | None = None

    def values(self, number: int) -> dict[str, str]:
        """The ``key=value`` words of the comments on move ``number``
        (:func:`comment_values`), later comments winning."""
        out: dict[str, str] = {}
        for text in self.comments.get(number, []):
            out.update(comment_values(text))
        return out


def comment_values(text: str) -> dict[str, str]:
    """The values a comment carries: its ``key=value`` words (key: a letter or ``_``, then
    letters, digits, ``_``; value: up to the next space), in order; other words are text."""
    return {m.group(1): m.group(2) for w in _WORD.finditer(text)
            if (m := _VALUE.fullmatch(w.group()))}


def format_move(move: Sequence[int]) -> str:
    """A move in the record's notation: ``x,y,o`` / ``row,col``."""
    return ",".join(str(v) for v in move)


def result_tag(state: State) -> str:
    """``1-0`` (player 0 won), ``0-1``, ``1/2-1/2`` (a draw), ``*`` (not over)."""
    result = state.result()
    if result is None:
        return "*"
    return {0: "1-0", 1: "0-1", None: "1/2-1/2"}[result["winner"]]


def score_of(state: State) -> tuple[int, int]:
    """What the ``Score`` header says: the result's points once the game is over, else the
    scores so far (boxes; Extreme Tic-Tac-Toe: blocks won)."""
    result = state.result()
    if result is not None:
        return tuple(result["points"])
    return tuple(state.scores)


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _game_of(headers: dict[str, str], line_of) -> Game:
    """The Game the headers name (``Game``, and ``Size`` = ``WxH`` for Dots and Boxes)."""
    name = headers.get("Game")
    if name is None:
        raise RecordError("header", 'no [Game "..."] header', line=1)
    if name not in game_names():
        raise RecordError("header", f"unknown game {name!r}; known: {', '.join(game_names())}",
                          line=line_of("Game"))
    size = headers.get("Size")
    if name == "dots-and-boxes":
        if size is None:
            raise RecordError("header", 'a Dots-and-Boxes record needs [Size "WxH"] (boxes)',
                              line=1)
        m = _SIZE.fullmatch(size)
        if m is None:
            raise RecordError("header", f"Size must be WxH (boxes, e.g. 5x5), not {size!r}",
                              line=line_of("Size"))
        params = {"width": int(m.group(1)), "height": int(m.group(2))}
    else:
        if size is not None:
            raise RecordError("header", f"{name} takes no Size", line=line_of("Size"))
        params = {}
    try:
        return load_game(name, **params)
    except UnknownGame as exc:
        raise RecordError("header", str(exc), line=line_of("Size")) from None


def _check_headers(headers: dict[str, str], line_of) -> None:
    """The values of the headers this module reads (other headers are free text)."""
    if "Result" in headers and headers["Result"] not in RESULTS:
        raise RecordError("header", f"Result must be one of {', '.join(RESULTS)}, not "
                          f"{headers['Result']!r}", line=line_of("Result"))
    if "Score" in headers and _SCORE.fullmatch(headers["Score"]) is None:
        raise RecordError("header", f"Score must be two numbers, N-M, not {headers['Score']!r}",
                          line=line_of("Score"))
    if "Position" in headers and _POSITION.fullmatch(headers["Position"]) is None:
        raise RecordError("header", "Position must be <serial> or <serial>.<head> (16 hex "
                          f"digits), not {headers['Position']!r}", line=line_of("Position"))


def _unescape(value: str) -> str:
    return _ESCAPED.sub(r"\1", value)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def parse_record(text: str, *, check: bool = True) -> Record:
    """Read a record (the format of the module docstring).

    With ``check`` (the default) every move is replayed with the engine's rules: an illegal
    move, a turn that is not its player's (or goes on when it must end), a ``+`` mark that
    does not count the boxes (blocks) the move completed, and ``Result``, ``Score`` or
    ``Position`` headers (or the result after the moves) that disagree with the game are
    refused, and ``Record.state`` is the final position. Without it only the grammar, the
    headers and each move's notation and range are checked (turns follow the marker order,
    not the rules). Raises :class:`RecordError` (its ``move`` and ``line`` say where)."""
    if not isinstance(text, str):
        raise TypeError(f"a record is text, not {type(text).__name__}")
    if len(text) > MAX_RECORD_CHARS:
        raise RecordError("too_large", f"a record has at most {MAX_RECORD_CHARS} characters, "
                          f"this one {len(text)}")
    headers: dict[str, str] = {}
    header_pos: dict[str, int] = {}
    pos, end = 0, len(text)
    while True:
        while pos < end and text[pos].isspace():
            pos += 1
        if pos >= end or text[pos] != "[":
            break
        h = _HEADER.match(text, pos)
        if h is None:
            eol = text.find("\n", pos)
            if eol < 0 and "]" not in text[pos:]:
                raise RecordError("truncated", "the record ends inside a header",
                                  line=_line(text, pos))
            raise RecordError("header", 'a header is [Key "Value"] (Key: letters, digits, _; '
                              'the value in double quotes on one line, \\" and \\\\ '
                              "escaped)", line=_line(text, pos))
        key = h.group(1)
        if key in headers:
            raise RecordError("header", f"header {key!r} given twice", line=_line(text, pos))
        headers[key] = _unescape(h.group(2))
        header_pos[key] = pos
        pos = h.end()

    def line_of(key: str) -> int:
        return _line(text, header_pos.get(key, 0))

    game = _game_of(headers, line_of)
    _check_headers(headers, line_of)

    # The movetext: turns of moves, with comments and an optional result at the end.
    moves: list[Move] = []
    move_pos: list[int] = []
    marks: list[int | None] = []
    players: list[int] = []  # each move's player by the turn markers
    turn_starts: list[int] = []  # the index in moves of each turn's first move
    comments: dict[int, list[str]] = {}
    result_token: str | None = None
    arity = len(game.action_to_move(0))
    turn_open = False
    while pos < end:
        m = _TOKEN.match(text, pos)
        kind = m.lastgroup if m is not None else None
        if kind == "space":
            pos = m.end()
            continue
        number = len(moves) + 1
        if result_token is not None and kind != "comment":
            raise RecordError("syntax", "nothing but comments may follow the result "
                              f"{result_token!r}", move=None, line=_line(text, pos))
        if kind is None:
            if text[pos] == "{":
                raise RecordError("truncated", "a comment opened with '{' is never closed",
                                  move=len(moves) or None, line=_line(text, pos))
            word = _WORD.match(text, pos).group()
            shown = word if len(word) <= 24 else word[:24] + "..."
            raise RecordError("notation", f"{shown!r} is no move of {game.name} (a move is "
                              f"{'x,y,o' if arity == 3 else 'row,col'}), no turn marker "
                              "(N. or N...), comment or result", move=number,
                              line=_line(text, pos))
        if kind == "comment":
            comments.setdefault(len(moves), []).append(m.group()[1:-1].strip())
        elif kind == "result":
            if turn_open:
                raise RecordError("truncated", "the last turn has no move", move=number,
                                  line=_line(text, pos))
            result_token = m.group()
        elif kind == "marker":
            if turn_open:
                raise RecordError("turn", f"turn marker {m.group()!r} follows a turn with "
                                  "no move", move=number, line=_line(text, pos))
            k = len(turn_starts)
            expected = f"{k // 2 + 1}{'.' if k % 2 == 0 else '...'}"
            if m.group() != expected:
                raise RecordError("turn", f"turn marker {m.group()!r} where {expected!r} comes "
                                  "(N. opens player 0's turns, N... player 1's, by turns)",
                                  move=number, line=_line(text, pos))
            turn_starts.append(len(moves))
            turn_open = True
        else:  # a move
            if not turn_starts:
                raise RecordError("syntax", "a move before the first turn marker '1.'",
                                  move=number, line=_line(text, pos))
            coords = tuple(int(v) for v in m.group("move").split(","))
            if len(coords) != arity:
                raise RecordError("notation", f"{m.group('move')!r} is no move of {game.name} "
                                  f"(a move is {'x,y,o' if arity == 3 else 'row,col'})",
                                  move=number, line=_line(text, pos))
            try:
                moves.append(game.parse_move(list(coords)))
            except IllegalMove as exc:
                raise RecordError("illegal_move", str(exc), move=number, line=_line(text, pos),
                                  move_reason=exc.reason) from None
            move_pos.append(pos)
            marks.append(len(m.group("marks")) or None)
            players.append((len(turn_starts) - 1) % 2)
            turn_open = False
        pos = m.end()
    if turn_open:
        raise RecordError("truncated", "the record ends with a turn marker and no move",
                          move=len(moves) + 1, line=_line(text, end))
    if result_token is not None and "Result" in headers and result_token != headers["Result"]:
        raise RecordError("result", f"the movetext ends with {result_token!r} but the Result "
                          f"header says {headers['Result']!r}", line=line_of("Result"))
    record = Record(game, headers, moves, comments)
    if check:
        record.state = _replay(record, text, move_pos, marks, players, result_token, line_of)
    return record


def _replay(record: Record, text: str, move_pos: list[int], marks: list[int | None],
            players: list[int], result_token: str | None, line_of) -> State:
    """The state after the record's moves, every rule of :func:`parse_record` checked."""
    state = record.game.new_state()
    for i, move in enumerate(record.moves):
        number = i + 1
        line = _line(text, move_pos[i])
        if not state.is_terminal() and state.to_move != players[i]:
            if players[i] != players[i - 1]:
                raise RecordError("turn", f"move {i} completed a box (block) and its player "
                                  f"moves again: move {number} belongs to the same turn",
                                  move=number, line=line)
            raise RecordError("turn", f"move {i} completed nothing (or was a bonus move): the "
                              f"turn passed, so move {number} opens a new turn", move=number,
                              line=line)
        try:
            played = state.play(move)
        except IllegalMove as exc:
            raise RecordError("illegal_move", str(exc), move=number, line=line,
                              move_reason=exc.reason) from None
        if marks[i] is not None and marks[i] != played.completed:
            raise RecordError("turn", f"{'+' * marks[i]} marks {marks[i]} completed, but the "
                              f"move completed {played.completed}", move=number, line=line)
    headers = record.headers
    tag = result_tag(state)
    if "Result" in headers and headers["Result"] != tag:
        raise RecordError("result", f"the Result header says {headers['Result']!r}, the moves "
                          f"give {tag!r}", line=line_of("Result"))
    if result_token is not None and result_token != tag:
        raise RecordError("result", f"the movetext ends with {result_token!r}, the moves give "
                          f"{tag!r}", line=_line(text, len(text)))
    if "Score" in headers:
        score = "-".join(str(v) for v in score_of(state))
        if headers["Score"] != score:
            raise RecordError("result", f"the Score header says {headers['Score']!r}, the "
                              f"moves give {score!r}", line=line_of("Score"))
    if "Position" in headers:
        serial = int(headers["Position"].partition(".")[0])
        if serial != state.serial:
            raise RecordError("result", f"the Position header names serial {serial}, the "
                              f"record has {state.serial} moves", line=line_of("Position"))
    return state


def _comment_text(value: str | Mapping[str, object]) -> str:
    if isinstance(value, Mapping):
        words = []
        for k, v in value.items():
            shown = format_move(v) if isinstance(v, (list, tuple)) else str(v)
            if not re.fullmatch(_VALUE_KEY, str(k)) or not shown or any(c.isspace() for c in shown):
                raise ValueError(f"a comment value is key=value without spaces, not "
                                 f"{k!r}={shown!r}")
            words.append(f"{k}={shown}")
        value = " ".join(words)
    if "}" in value or "{" in value:
        raise ValueError(f"a comment may not hold braces: {value!r}")
    return value.strip()


def write_record(game: Game, moves: Sequence[Sequence[int]], *,
                 headers: Mapping[str, str] | None = None,
                 comments: Mapping[int, str | Mapping[str, object] | Sequence] | None = None
                 ) -> str:
    """The record of ``moves`` (from the start) of ``game``: headers ``Game``, ``Size``
    (Dots and Boxes), then ``headers`` (e.g. ``Player0``, ``Player1``, ``Date``,
    ``Position``; any ``[A-Za-z][A-Za-z0-9_]*`` key, values on one line), ``Result`` and
    ``Score`` from the moves, then one line per turn pair, ``+`` marks and ``comments``
    (move number -> a text, a mapping written as ``key=value`` words, or a list of those;
    0: before the first move), and the result.

    The moves are replayed (a :class:`RecordError` for an illegal one), so the text parses
    back (:func:`parse_record`) to the same moves, comments and result. Raises ValueError for
    a header or comment that cannot be written."""
    state = game.new_state()
    turns: list[list[str]] = []
    comments = dict(comments or {})
    for number in comments:
        if type(number) is not int or not 0 <= number <= len(moves):
            raise ValueError(f"a comment on move {number!r}, of {len(moves)} moves")
    player = None
    for i, move in enumerate(moves):
        try:
            played = state.play(tuple(move))
        except IllegalMove as exc:
            raise RecordError("illegal_move", str(exc), move=i + 1,
                              move_reason=exc.reason) from None
        if played.player != player:
            turns.append([])
            player = played.player
        word = format_move(played.move) + "+" * played.completed
        turns[-1].append(word)
        for text in _comments(comments.get(i + 1)):
            turns[-1].append("{" + text + "}")
    params = game.params()
    out = {"Game": game.name}
    if "width" in params:
        out["Size"] = f"{params['width']}x{params['height']}"
    for key, value in (headers or {}).items():
        if key in ("Game", "Size", "Result", "Score"):
            continue  # the writer's own
        value = str(value)
        if not _KEY.fullmatch(key) or "\n" in value or "\r" in value:
            raise ValueError(f"cannot write the header {key!r}: {value!r}")
        out[key] = value
    out["Result"] = result_tag(state)
    out["Score"] = "-".join(str(v) for v in score_of(state))
    order = [k for k in HEADER_ORDER if k in out] + [k for k in out if k not in HEADER_ORDER]
    lines = [f'[{k} "{_escape(out[k])}"]' for k in order]
    lines.append("")
    opening = _comments(comments.get(0))
    if opening:
        lines.append(" ".join("{" + text + "}" for text in opening))
    for k in range(0, len(turns), 2):
        words = [f"{k // 2 + 1}.", *turns[k]]
        if k + 1 < len(turns):
            words += [f"{k // 2 + 1}...", *turns[k + 1]]
        lines.append(" ".join(words))
    lines.append(out["Result"])
    return "\n".join(lines) + "\n"


def _comments(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (str, Mapping)):
        return [_comment_text(value)]
    return [_comment_text(v) for v in value]


# -- OpenSpiel ---------------------------------------------------------------------------------

#: OpenSpiel's name of Dots and Boxes, and its defaults (``dots_and_boxes.cc``).
OPENSPIEL_GAME = "dots_and_boxes"
OPENSPIEL_DEFAULTS = MappingProxyType({"num_rows": 2, "num_cols": 2})
_OPENSPIEL_GAME_RE = re.compile(r"dots_and_boxes(?:\(([^()]*)\))?")
_ACTION = re.compile(r"[0-9]{1,9}")


def _openspiel_game(spec: str, line: int) -> Game:
    m = _OPENSPIEL_GAME_RE.fullmatch(spec.strip())
    if m is None:
        raise RecordError("header", f"not OpenSpiel's {OPENSPIEL_GAME} game: {spec.strip()!r} "
                          "(OpenSpiel has no Extreme Tic-Tac-Toe)", line=line)
    params = dict(OPENSPIEL_DEFAULTS)
    for item in filter(None, (m.group(1) or "").split(",")):
        key, _, value = item.partition("=")
        key = key.strip()
        if key == "utility_margin":  # how returns are scaled: no bearing on the moves
            continue
        if key not in params or not value.strip().isdigit():
            raise RecordError("header", f"OpenSpiel parameter {item.strip()!r}: "
                              f"{OPENSPIEL_GAME} takes num_rows and num_cols", line=line)
        params[key] = int(value)
    try:
        return load_game("dots-and-boxes", width=params["num_cols"],
                         height=params["num_rows"])
    except UnknownGame as exc:
        raise RecordError("header", str(exc), line=line) from None


def parse_openspiel(text: str, game: Game | None = None, *, check: bool = True) -> Record:
    """A record from OpenSpiel's ``dots_and_boxes``: either the text of
    ``pyspiel.serialize_game_and_state`` (``[Game]`` ``dots_and_boxes(num_cols=W,num_rows=H)``,
    ``[State]`` one action per line), or a bare list of action ids (separated by spaces,
    commas or newlines, brackets allowed) of ``game`` (a Dots-and-Boxes game, required then).
    OpenSpiel's action ids are the engine's: the horizontal lines row by row, then the
    vertical ones (``Game.action_to_move``). With ``check`` the moves are replayed
    (``Record.state``). Raises :class:`RecordError`."""
    if not isinstance(text, str):
        raise TypeError(f"a record is text, not {type(text).__name__}")
    if len(text) > MAX_RECORD_CHARS:
        raise RecordError("too_large", f"a record has at most {MAX_RECORD_CHARS} characters, "
                          f"this one {len(text)}")
    lines = text.splitlines()
    first_action_line = 0
    if any(ln.strip() == "[Game]" for ln in lines):
        i = next(i for i, ln in enumerate(lines) if ln.strip() == "[Game]")
        if i + 1 >= len(lines):
            raise RecordError("truncated", "[Game] with no game after it", line=i + 1)
        found = _openspiel_game(lines[i + 1], i + 2)
        if game is not None and game != found:
            raise RecordError("header", f"the record is {found!r}, not {game!r}", line=i + 2)
        game = found
        try:
            first_action_line = next(j for j, ln in enumerate(lines) if ln.strip() == "[State]")
        except StopIteration:
            raise RecordError("truncated", "no [State] section", line=len(lines)) from None
        first_action_line += 1
    elif game is None:
        raise RecordError("header", "a bare list of OpenSpiel actions needs the game's size "
                          "(width and height)", line=1)
    if game.name != "dots-and-boxes":
        raise RecordError("header", "OpenSpiel action sequences are of Dots and Boxes only "
                          "(OpenSpiel has no Extreme Tic-Tac-Toe)", line=1)
    moves: list[Move] = []
    move_lines: list[int] = []
    for j in range(first_action_line, len(lines)):
        body = lines[j].split("#", 1)[0] if first_action_line else lines[j]
        for word in re.split(r"[\s,\[\]]+", body):
            if not word:
                continue
            number = len(moves) + 1
            if _ACTION.fullmatch(word) is None:
                raise RecordError("notation", f"{word[:24]!r} is no OpenSpiel action id",
                                  move=number, line=j + 1)
            try:
                moves.append(game.action_to_move(int(word)))
            except IllegalMove as exc:
                raise RecordError("illegal_move", str(exc), move=number, line=j + 1,
                                  move_reason=exc.reason) from None
            move_lines.append(j + 1)
    params = game.params()
    record = Record(game, {"Game": game.name, "Size": f"{params['width']}x{params['height']}"},
                    moves)
    if check:
        state = game.new_state()
        for i, move in enumerate(moves):
            try:
                state.play(move)
            except IllegalMove as exc:
                raise RecordError("illegal_move", f"action {game.move_to_action(move)}: {exc}",
                                  move=i + 1, line=move_lines[i],
                                  move_reason=exc.reason) from None
        record.state = state
    return record


__all__ = ["Record", "RecordError", "parse_record", "write_record", "parse_openspiel",
           "comment_values", "format_move", "result_tag", "score_of", "MAX_RECORD_CHARS",
           "RESULTS"]
