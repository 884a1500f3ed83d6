"""Property tests over random games on random sizes (hypothesis)."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boxfish.engine import load_game, replay

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@st.composite
def games(draw, max_side=6):
    w = draw(st.integers(1, max_side))
    h = draw(st.integers(1, max_side))
    game = load_game("dots-and-boxes", width=w, height=h)
    order = draw(st.permutations(range(game.num_lines)))
    n = draw(st.integers(0, game.num_lines))
    return game, [game.geometry.moves[ln] for ln in order[:n]]


def observables(s):
    ch = s.chains()
    return (s.legal_moves(), s.scores, s.to_move, s.serial, s.index(), s.opportunities(),
            s.pitfalls(), s.safe_moves(), ch.chains, ch.chain_of, ch.valence, ch.phase,
            s.to_lines(), s.is_terminal(), s.history)


@SETTINGS
@given(games())
def test_scores_add_up_and_the_mover_moves_again_exactly_after_a_box(case):
    game, moves = case
    s = game.new_state()
    for m in moves:
        before = sum(s.scores)
        mover = s.to_move
        r = s.play(m)
        assert sum(s.scores) == before + r.completed
        assert (s.to_move == mover) == (r.completed > 0)
        assert r.turn_passed == (r.completed == 0)
    taken = sum(1 for x, y in game.geometry.box_xy if s.valence(x, y) == 4)
    assert sum(s.scores) == taken
    assert all(s.owner(x, y) in (0, 1) for x, y in game.geometry.box_xy if s.valence(x, y) == 4)


@SETTINGS
@given(games(), st.data())
def test_undo_restores_every_observable(case, data):
    game, moves = case
    s = game.new_state()
    snapshots = []
    for m in moves:
        snapshots.append(observables(s))
        s.play(m)
    k = data.draw(st.integers(0, len(moves)))
    for _ in range(k):
        s.undo()
    assert observables(s) == (snapshots + [observables(s)])[len(moves) - k]
    for i in range(len(moves) - k - 1, -1, -1):
        s.undo()
        assert observables(s) == snapshots[i]


@SETTINGS
@given(games())
def test_replay_equals_incremental_play(case):
    game, moves = case
    s = game.new_state()
    for m in moves:
        s.play(m)
    r = replay(game, list(enumerate(moves, start=1)))
    assert r == s and observables(r) == observables(s)


@SETTINGS
@given(games(), st.integers(1, 7))
def test_kept_structures_equal_a_from_scratch_recomputation(case, step):
    game, moves = case
    s = game.new_state()
    for i, m in enumerate(moves):
        s.play(m)
        if i % step:
            continue  # let dirty regions pile up between queries sometimes
        assert s.chains() == s.chains_from_scratch()
        fresh = game.from_lines(s.to_lines(), to_move=s.to_move)
        assert s.opportunities() == fresh.opportunities()
        assert s.pitfalls() == fresh.pitfalls()
        assert s.chains().chains == fresh.chains().chains
        # the definitions, straight from valences
        geo = game.geometry
        val = [s.valence(x, y) for x, y in geo.box_xy]
        free = [ln for ln in range(game.num_lines) if not (s.drawn >> ln) & 1]
        expect_ops = {geo.moves[ln]: sum(1 for b in geo.line_boxes[ln] if val[b] == 3)
                      for ln in free}
        assert {o.move: o.boxes for o in s.opportunities()} == {
            m: n for m, n in expect_ops.items() if n}
        expect_pits = {geo.moves[ln]: sum(1 for b in geo.line_boxes[ln] if val[b] == 2)
                       for ln in free if not expect_ops[geo.moves[ln]]}
        assert s.pitfalls() == {m: r for m, r in expect_pits.items() if r}


@SETTINGS
@given(games())
def test_chain_invariants(case):
    game, moves = case
    s = game.new_state()
    for m in moves:
        s.play(m)
    ch = s.chains()
    in_chain = {b for c in ch.chains for b in c.boxes}
    geo = game.geometry
    for x, y in geo.box_xy:
        assert ((x, y) in in_chain) == (s.valence(x, y) in (2, 3))
    for i, c in enumerate(ch.chains):
        assert c.length == len(c.boxes) == len(set(c.boxes))
        assert all(ch.chain_of[b] == i for b in c.boxes)
        ends = {s.valence(*c.boxes[0]), s.valence(*c.boxes[-1])}
        if c.kind == "loop":
            assert c.length >= 4 and ends == {2}
        elif c.kind == "closed":
            assert s.valence(*c.boxes[0]) == 3 and s.valence(*c.boxes[-1]) == 3
        elif c.kind == "open":
            assert ends == {2}
        else:
            assert c.kind == "half-open" and 3 in ends
