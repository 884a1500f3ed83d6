"""Game records (engine.records): round trips of random legal games of both games and several
board sizes (property-based), and every kind of broken record refused with the move number
and the reason."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boxfish.engine import RecordError, load_game
from boxfish.engine.records import (
    MAX_RECORD_CHARS,
    comment_values,
    parse_record,
    result_tag,
    score_of,
    write_record,
)

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
DOTS_SIZES = [(1, 1), (2, 2), (3, 2), (2, 4), (3, 3), (5, 5)]
XTTT = load_game("extreme-tictactoe")


def random_game(game, seed: int, length: int | None = None) -> list:
    """The moves of a random legal game (its first ``length`` moves; None: to the end)."""
    rng = random.Random(seed)
    state = game.new_state()
    moves = []
    while not state.is_terminal() and (length is None or len(moves) < length):
        move = rng.choice(state.legal_moves())
        state.play(move)
        moves.append(move)
    return moves


def final_state(game, moves):
    state = game.new_state()
    for m in moves:
        state.play(m)
    return state


comment_text = st.text(alphabet=st.characters(blacklist_characters="{}\r",
                                              blacklist_categories=("Cs",)), max_size=20)
values = st.dictionaries(st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True),
                         st.from_regex(r"[+\-0-9a-z,.]{1,8}", fullmatch=True), max_size=3)


@st.composite
def records(draw, game):
    """(game, moves, comments, headers): a random legal game, finished or not, with comments
    (texts and values) on random moves and a few headers."""
    seed = draw(st.integers(0, 2**32 - 1))
    finished = draw(st.booleans())
    moves = random_game(game, seed, None if finished else draw(st.integers(0, 80)))
    numbers = st.integers(0, len(moves))
    comments = draw(st.dictionaries(numbers, st.one_of(comment_text, values), max_size=4))
    headers = draw(st.fixed_dictionaries({}, optional={
        "Player0": st.text(alphabet=st.characters(blacklist_characters="\r\n\x85\u2028\u2029",
                                                  blacklist_categories=("Cs",)), max_size=12),
        "Player1": st.sampled_from(["bob", 'the "engine"', "back\\slash"]),
        "Date": st.just("2026-11-27"),
        "Event": st.just("club night"),
    }))
    headers["Position"] = f"{len(moves)}.0123456789abcdef" if moves else "0"
    return game, moves, comments, headers


def check_round_trip(game, moves, comments, headers):
    text = write_record(game, moves, headers=headers, comments=comments)
    record = parse_record(text)
    assert record.game == game
    assert record.moves == [tuple(m) for m in moves]
    state = final_state(game, moves)
    assert record.state.result() == state.result()
    assert record.headers["Result"] == result_tag(state)
    assert record.headers["Score"] == "-".join(map(str, score_of(state)))
    for key, value in headers.items():
        assert record.headers[key] == value
    for number, value in comments.items():
        want = value if isinstance(value, dict) else comment_values(value)
        assert record.values(number) == {k: str(v) for k, v in want.items()}
        if isinstance(value, str) and value.strip():
            assert value.strip() in record.comments[number]
    # written again, the same text
    assert write_record(record.game, record.moves, headers=record.headers,
                        comments=record.comments) == text


@pytest.mark.parametrize("width,height", DOTS_SIZES)
@SETTINGS
@given(data=st.data())
def test_dots_records_round_trip(width, height, data):
    check_round_trip(*data.draw(records(load_game("dots-and-boxes", width=width,
                                                  height=height))))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rec=records(XTTT))
def test_xttt_records_round_trip(rec):
    check_round_trip(*rec)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), size=st.sampled_from(DOTS_SIZES + [None]),
       pick=st.integers(0, 10_000))
def test_a_finished_game_with_a_move_left_out_is_refused(seed, size, pick):
    """Whatever move is cut from a finished game's record, a checked parse refuses it (a turn
    out of place, an illegal move, or a Result that no longer holds), naming a move or the
    result."""
    game = XTTT if size is None else load_game("dots-and-boxes", width=size[0], height=size[1])
    moves = random_game(game, seed)
    cut = pick % len(moves)
    text = write_record(game, moves)
    head, _, body = text.partition("\n\n")
    words = body.split()
    move_words = [i for i, w in enumerate(words) if "," in w]
    del words[move_words[cut]]
    with pytest.raises(RecordError) as caught:
        parse_record(head + "\n\n" + " ".join(words))
    assert caught.value.reason in ("turn", "illegal_move", "result", "truncated")


def dots(moves_text: str, headers: str = '[Size "2x2"]') -> str:
    return f'[Game "dots-and-boxes"]\n{headers}\n\n{moves_text}\n'


@pytest.mark.parametrize("text, reason, move, line", [
    # illegal moves
    (dots("1. 1,1,1 1... 1,1,1"), "illegal_move", 2, 4),
    (dots("1. 1,1,1 1... 9,9,1"), "illegal_move", 2, 4),
    (dots("1. 1,1,3"), "illegal_move", 1, 4),
    # turns
    (dots("1. 1,1,1 1,2,1"), "turn", 2, 4),
    (dots("1. 1,1,1 2. 1,2,1"), "turn", 2, 4),
    (dots("1... 1,1,1"), "turn", 1, 4),
    (dots("1. 1,1,1 1... 1,1,2 2. 2,1,2 2... 1,2,1+ 3. 1,2,2"), "turn", 5, 4),
    (dots("1. 1,1,1+"), "turn", 1, 4),
    # unknown notation
    (dots("1. a1"), "notation", 1, 4),
    (dots("1. 1,1"), "notation", 1, 4),
    (dots("1. 1,1,1 1... h1-v2"), "notation", 2, 4),
    (dots("1. 1;1;1"), "notation", 1, 4),
    # bad headers
    ('[Game "chess"]\n\n1. 1,1,1', "header", None, 1),
    ('[Size "2x2"]\n\n1. 1,1,1', "header", None, 1),
    (dots("1. 1,1,1", '[Size "2 by 2"]'), "header", None, 2),
    (dots("1. 1,1,1", '[Size "0x2"]'), "header", None, 2),
    (dots("1. 1,1,1", '[Size "2x2"]\n[Size "3x3"]'), "header", None, 3),
    (dots("1. 1,1,1", '[Size "2x2"]\n[Result "2-0"]'), "header", None, 3),
    (dots("1. 1,1,1", '[Size "2x2"]\n[Score "lots"]'), "header", None, 3),
    (dots("1. 1,1,1", '[Size "2x2"]\n[Position "x"]'), "header", None, 3),
    (dots("1. 1,1,1", '[Size "2x2"]\n[Bad key "x"]'), "header", None, 3),
    ('[Game "extreme-tictactoe"]\n[Size "2x2"]\n', "header", None, 2),
    # the result
    (dots("1. 1,1,1", '[Size "2x2"]\n[Result "1-0"]'), "result", None, 3),
    (dots("1. 1,1,1 1-0"), "result", None, 5),
    (dots("1. 1,1,1", '[Size "2x2"]\n[Score "1-0"]'), "result", None, 3),
    (dots("1. 1,1,1", '[Size "2x2"]\n[Position "2.0123456789abcdef"]'), "result", None, 3),
    (dots("1. 1,1,1 * 1... 1,2,1"), "syntax", None, 4),
    # truncated
    (dots("1. 1,1,1 1..."), "truncated", 2, 5),
    (dots("1. 1,1,1 {a comment that never ends"), "truncated", 1, 4),
    ('[Game "dots-and-boxes"]\n[Size "2x', "truncated", None, 2),
    # garbage
    ("\x00\x01garbage", "header", None, 1),
    ("", "header", None, 1),
    (dots("1. 1,1,1 1... 1,2,1 ¿"), "notation", 3, 4),
])
def test_broken_records_name_the_move_and_the_reason(text, reason, move, line):
    with pytest.raises(RecordError) as caught:
        parse_record(text)
    err = caught.value
    assert (err.reason, err.move, err.line) == (reason, move, line), str(err)
    assert isinstance(err, ValueError)
    if move is not None:
        assert str(err).startswith(f"move {move}")


def test_an_illegal_move_carries_the_engines_reason():
    with pytest.raises(RecordError) as caught:
        parse_record(dots("1. 1,1,1 1... 1,1,1"))
    assert caught.value.move_reason == "already_drawn"
    with pytest.raises(RecordError) as caught:
        parse_record('[Game "extreme-tictactoe"]\n\n1. 0,0 1... 0,0\n')
    assert (caught.value.move, caught.value.move_reason) == (2, "occupied")


def test_too_large_records_are_refused_before_parsing():
    with pytest.raises(RecordError) as caught:
        parse_record(dots("1. 1,1,1" + " " * MAX_RECORD_CHARS))
    assert caught.value.reason == "too_large"


def test_an_unchecked_parse_reads_the_grammar_only():
    record = parse_record(dots("1. 1,1,1 1... 1,1,1"), check=False)
    assert record.moves == [(1, 1, 1), (1, 1, 1)] and record.state is None
    with pytest.raises(RecordError):
        parse_record(dots("1. 1,1"), check=False)


def test_a_record_written_by_hand_reads():
    text = """[Game "dots-and-boxes"]
[Size "1x1"]
[Player0 "Alice"]   [Player1 "Bob"]
{a short one}
1.1,1,1 {value=0 best=1,2,1}  1... 1,2,1 2. 1,1,2
2... 2,1,2+ 0-1
"""
    record = parse_record(text)
    assert record.moves == [(1, 1, 1), (1, 2, 1), (1, 1, 2), (2, 1, 2)]
    assert record.state.result() == {"winner": 1, "points": [0, 1]}
    assert record.comments[0] == ["a short one"]
    assert record.values(1) == {"value": "0", "best": "1,2,1"}
    assert record.headers["Player1"] == "Bob"


def test_comment_values():
    assert comment_values("good move value=+3 best=1,2,1 x=") == {"value": "+3",
                                                                 "best": "1,2,1"}


def test_the_writer_refuses_what_it_cannot_write():
    game = load_game("dots-and-boxes", width=1, height=1)
    with pytest.raises(RecordError) as caught:
        write_record(game, [(1, 1, 1), (1, 1, 1)])
    assert (caught.value.reason, caught.value.move) == ("illegal_move", 2)
    with pytest.raises(ValueError):
        write_record(game, [(1, 1, 1)], comments={1: "a } brace"})
    with pytest.raises(ValueError):
        write_record(game, [(1, 1, 1)], headers={"Player0": "two\nlines"})
    with pytest.raises(ValueError):
        write_record(game, [(1, 1, 1)], comments={2: "after no move"})


def test_the_examples_of_the_docs_read():
    """Every ``text`` block of docs/records.md is a record that a checked parse takes."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "records.md").read_text()
    blocks = re.findall(r"```text\n(.*?)```", doc, re.S)
    assert len(blocks) >= 2
    for block in blocks:
        assert parse_record(block).state is not None
