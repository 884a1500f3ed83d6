"""Unit tests for every Dots-and-Boxes rule of the core (the Dots-and-Boxes rules of the
project's rules document)."""

import json

import pytest

from boxfish import engine
from boxfish.engine import IllegalMove, ReplayError, load_game, replay
from boxfish.engine.errors import UnknownGame


def game(w, h):
    return load_game("dots-and-boxes", width=w, height=h)


def test_sizes_and_counts():
    for w in (1, 2, 7, 20):
        for h in (1, 3, 20):
            g = game(w, h)
            assert g.num_lines == (h + 1) * w + h * (w + 1)
            assert len(g.new_state().legal_moves()) == g.num_lines
            assert g.num_boxes == w * h


@pytest.mark.parametrize("w,h", [(0, 1), (21, 2), (2, -1), ("3", 3), (True, 2), (2.0, 2)])
def test_bad_sizes_are_refused(w, h):
    with pytest.raises(UnknownGame):
        game(w, h)


def test_unknown_game_and_parameters():
    with pytest.raises(UnknownGame):
        load_game("chess")
    with pytest.raises(UnknownGame):
        load_game("dots-and-boxes", width=2, height=2, depth=3)


def test_games_are_shared_per_size_and_repr_round_trips():
    assert game(3, 4) is game(3, 4)
    g = game(3, 4)
    assert eval(repr(g), {"load_game": load_game}) == g


def test_action_ids_follow_the_spec():
    g = game(3, 2)  # width 3, height 2
    w, h = 3, 2
    for x in range(1, w + 1):
        for y in range(1, h + 2):
            assert g.move_to_action((x, y, 1)) == (y - 1) * w + (x - 1)
    for x in range(1, w + 2):
        for y in range(1, h + 1):
            assert g.move_to_action((x, y, 2)) == (h + 1) * w + (y - 1) * (w + 1) + (x - 1)
    for a in range(g.num_lines):
        assert g.move_to_action(g.action_to_move(a)) == a
    with pytest.raises(IllegalMove):
        g.action_to_move(g.num_lines)


def test_box_lines_follow_the_spec():
    g = game(3, 3)
    geo = g.geometry
    for b, (x, y) in enumerate(geo.box_xy):
        expect = {g.move_to_action(m) for m in [(x, y, 1), (x, y, 2), (x + 1, y, 2), (x, y + 1, 1)]}
        assert set(geo.box_lines[b]) == expect


def test_completing_a_box_scores_and_keeps_the_turn():
    s = game(1, 1).new_state()
    r = s.play((1, 1, 1))
    assert (r.completed, r.turn_passed, s.to_move) == (0, True, 1)
    s.play((1, 1, 2))
    s.play((2, 1, 2))
    assert s.to_move == 1
    r = s.play((1, 2, 1))
    assert r.player == 1 and r.completed == 1 and not r.turn_passed
    assert s.scores == (0, 1) and s.is_terminal()
    assert s.result() == {"winner": 1, "points": [0, 1]}


def test_a_line_can_complete_two_boxes():
    s = game(2, 1).new_state()
    for m in [(1, 1, 1), (2, 1, 1), (1, 2, 1), (2, 2, 1), (1, 1, 2), (3, 1, 2)]:
        s.play(m)
    mover = s.to_move
    r = s.play((2, 1, 2))
    assert r.completed == 2 and s.scores[mover] == 2 and s.to_move == mover


@pytest.mark.parametrize("move,reason", [
    ((0, 1, 1), "out_of_range"), ((3, 1, 1), "out_of_range"), ((1, 4, 1), "out_of_range"),
    ((4, 1, 2), "out_of_range"), ((1, 3, 2), "out_of_range"), ((-1, 1, 2), "out_of_range"),
    ((1, 1, 3), "malformed"), ((1, 1), "malformed"), ("1,1,1", "malformed"), (None, "malformed"),
    ((1, 1, True), "malformed"), ((1.0, 1, 1), "malformed"), ((1, 1, 1, 1), "malformed"),
])
def test_illegal_move_reasons(move, reason):
    s = game(2, 2).new_state()
    before = (s.to_lines(), s.serial, s.to_move, s.scores, s.index())
    with pytest.raises(IllegalMove) as exc:
        s.play(move)
    assert exc.value.reason == reason
    assert isinstance(exc.value, ValueError)
    assert reason in str(exc.value)
    # the move in its JSON form, as the API takes it, whether a tuple or a list was played
    written = json.dumps(list(move) if isinstance(move, tuple) else move)
    assert f"illegal move {written}: {reason}" in str(exc.value)
    assert (s.to_lines(), s.serial, s.to_move, s.scores, s.index()) == before


def test_already_drawn_and_game_over():
    s = game(1, 1).new_state()
    s.play((1, 1, 2))
    with pytest.raises(IllegalMove) as exc:
        s.play((1, 1, 2))
    assert exc.value.reason == "already_drawn" and "move 1" in str(exc.value)
    for m in [(1, 1, 1), (2, 1, 2), (1, 2, 1)]:
        s.play(m)
    with pytest.raises(IllegalMove) as exc:
        s.play((1, 1, 1))
    assert exc.value.reason == "game_over"


def test_parse_move():
    g = game(2, 2)
    assert g.parse_move([1, 3, 1]) == (1, 3, 1)
    for bad, reason in [([1, 1], "malformed"), ([1, 1, "1"], "malformed"), ({}, "malformed"),
                        ([1, 1, 0], "malformed"), ([9, 1, 1], "out_of_range")]:
        with pytest.raises(IllegalMove) as exc:
            g.parse_move(bad)
        assert exc.value.reason == reason


def test_undo_is_the_exact_inverse_and_stops_at_the_start():
    s = game(2, 2).new_state()
    with pytest.raises(IndexError):
        s.undo()
    s.play((1, 1, 1))
    assert s.undo() == (1, 1, 1)
    assert s == game(2, 2).new_state()


def test_copy_is_independent():
    s = game(2, 2).new_state()
    s.play((1, 1, 1))
    c = s.copy()
    c.play((2, 1, 1))
    assert s.serial == 1 and c.serial == 2 and c.index() != s.index()
    assert c.history == [(1, 1, 1), (2, 1, 1)] and s.history == [(1, 1, 1)]
    d = s.copy()  # the index is shared copy-on-write: the original's moves must not leak
    s.play((1, 3, 1))
    s.undo()
    s.undo()
    assert d.index() == {1: {1: {1: 1}}} and s.index() == {}
    d.undo()
    assert c.index() == {1: {1: {1: 1}}, 2: {1: {1: 2}}}


def test_move_index_structure():
    """The move index is x -> y -> orientation -> serial of the move that drew the line."""
    s = game(3, 3).new_state()
    moves = [(1, 1, 1), (3, 1, 1), (1, 1, 2), (4, 1, 2), (1, 2, 1)]
    for m in moves:
        s.play(m)
    assert s.index() == {1: {1: {1: 1, 2: 3}, 2: {1: 5}}, 3: {1: {1: 2}}, 4: {1: {2: 4}}}
    idx = s.index()
    idx[1][1][1] = 99  # a copy: changing it changes nothing
    assert s.index()[1][1][1] == 1
    s.undo()
    assert s.index() == {1: {1: {1: 1, 2: 3}}, 3: {1: {1: 2}}, 4: {1: {2: 4}}}


def test_opportunities_and_rank():
    # 1x3 corridor: draw the top and bottom lines; drawing the left end then opens the chain.
    s = game(3, 1).new_state()
    for m in [(1, 1, 1), (2, 1, 1), (3, 1, 1), (1, 2, 1), (2, 2, 1), (3, 2, 1)]:
        s.play(m)
    assert s.opportunities() == []
    assert s.pitfalls() == {(1, 1, 2): 1, (2, 1, 2): 2, (3, 1, 2): 2, (4, 1, 2): 1}
    assert s.safe_moves() == []
    s.play((1, 1, 2))
    ops = s.opportunities()
    assert [(o.move, o.boxes, o.rank) for o in ops] == [((2, 1, 2), 1, 3)]
    assert s.opportunity_rank((2, 1, 2)) == 3 and s.opportunity_rank((4, 1, 2)) == 0
    assert s.serial == 7  # the expansion's temporary moves were taken back


def test_pitfall_ranks_and_safe_lines():
    s = game(2, 2).new_state()
    assert s.pitfalls() == {} and len(s.safe_moves()) == 12
    s.play((1, 1, 1))
    s.play((1, 1, 2))  # box (1,1) has valence 2
    assert s.pitfall_rank((2, 1, 2)) == 1 and s.pitfall_rank((1, 2, 1)) == 1
    assert s.pitfall_rank((2, 2, 2)) == 0
    assert set(s.pitfalls()) == {(2, 1, 2), (1, 2, 1)}


def test_chain_kinds():
    g = game(3, 1)
    s = g.new_state()
    for m in [(1, 1, 1), (2, 1, 1), (3, 1, 1), (1, 2, 1), (2, 2, 1), (3, 2, 1)]:
        s.play(m)
    ch = s.chains()
    assert [(c.kind, c.length, c.boxes) for c in ch.chains] == [("open", 3, ((1, 1), (2, 1),
                                                                            (3, 1)))]
    assert ch.chain_of == {(1, 1): 0, (2, 1): 0, (3, 1): 0}
    s.play((1, 1, 2))
    assert [(c.kind, c.length) for c in s.chains().chains] == [("half-open", 3)]
    s.play((4, 1, 2))
    assert [(c.kind, c.length) for c in s.chains().chains] == [("closed", 3)]
    loop = game(2, 2).new_state()
    for m in [(1, 1, 1), (2, 1, 1), (1, 3, 1), (2, 3, 1), (1, 1, 2), (1, 2, 2), (3, 1, 2),
              (3, 2, 2)]:
        loop.play(m)
    assert [(c.kind, c.length) for c in loop.chains().chains] == [("loop", 4)]
    assert loop.chains().valence == ((2, 2), (2, 2))


def test_phase_follows_the_chain_state():
    s = game(1, 2).new_state()
    assert s.phase == "start"
    for m in [(1, 1, 1), (1, 1, 2), (2, 1, 2)]:
        s.play(m)
    assert s.phase == "start"
    s.play((1, 2, 1))  # takes the top box; the bottom box now has valence 1: nothing to take
    assert s.phase == "middle"
    s.play((1, 2, 2))
    assert s.phase == "end"
    s.undo()
    assert s.phase == "middle"


def test_lines_round_trip_and_from_lines():
    g = game(2, 3)
    s = g.new_state()
    for m in [(1, 1, 1), (2, 4, 1), (3, 3, 2)]:
        s.play(m)
    lines = s.to_lines()
    assert len(lines) == g.num_lines and lines.count("1") == 3
    t = g.from_lines(lines, to_move=s.to_move)
    assert t.to_lines() == lines and t.legal_moves() == s.legal_moves() and t.serial == 3
    assert t.index() == {1: {1: {1: 0}}, 2: {4: {1: 0}}, 3: {3: {2: 0}}}
    with pytest.raises(IndexError):
        t.undo()
    for bad in ["", "2" * g.num_lines, lines + "0"]:
        with pytest.raises(ValueError):
            g.from_lines(bad)
    with pytest.raises(ValueError):
        g.from_lines(lines, to_move=2)
    with pytest.raises(ValueError):
        g.from_lines(lines, scores=(1, 0))  # no box is complete


def test_replay_equals_play_and_names_bad_serials():
    g = game(3, 3)
    moves = [(1, 1, 1), (1, 1, 2), (2, 1, 2), (1, 2, 1), (3, 3, 1)]
    s = g.new_state()
    for m in moves:
        s.play(m)
    r = replay(g, list(enumerate(moves, start=1)))
    assert r == s and r.index() == s.index() and r.scores == s.scores
    with pytest.raises(ReplayError) as exc:
        replay(g, [(1, moves[0]), (3, moves[1])])
    assert exc.value.serial == 3 and exc.value.reason == "gap"
    with pytest.raises(ReplayError) as exc:
        replay(g, [(1, moves[0]), (1, moves[1])])
    assert exc.value.serial == 1 and exc.value.reason == "duplicate"
    with pytest.raises(ReplayError) as exc:
        replay(g, [(1, moves[0]), (2, moves[0])])
    assert exc.value.serial == 2 and exc.value.reason == "already_drawn"
    assert "serial 2" in str(exc.value)
    with pytest.raises(ReplayError) as exc:
        replay(g, [(1, (9, 9, 9))])
    assert exc.value.serial == 1 and exc.value.reason == "malformed"
    with pytest.raises(ReplayError):
        replay(g, ["junk"])
    partial = replay(g, [(1, moves[0])])
    resumed = replay(g, [(i, m) for i, m in enumerate(moves, start=1)][1:], state=partial)
    assert resumed == s


def test_to_dict_is_json_ready():
    import json
    s = game(2, 2).new_state()
    s.play((1, 1, 1))
    d = s.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["serial"] == 1 and d["to_move"] == 1 and d["status"] == "in_progress"


def test_public_api_names():
    for name in ["load_game", "replay", "analyse", "IllegalMove", "ReplayError", "Analysis"]:
        assert hasattr(engine, name)
