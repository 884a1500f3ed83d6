"""The position generators of engine.dots.positions, replayed through the engine's rules."""

from __future__ import annotations

import random

import pytest

from boxfish.engine import load_game
from boxfish.engine.dots.positions import GeneratedPosition, biased_play, safe_play

SIZES = [(1, 1), (2, 2), (3, 3), (5, 5), (4, 6), (2, 5)]


def num_lines(w: int, h: int) -> int:
    return (h + 1) * w + h * (w + 1)


def replay(p: GeneratedPosition):
    """The engine's state after ``p.moves``, each checked by ``play``, with the kind of each
    move: ("capture" | "safe" | "gives", boxes with three sides before the move, safe lines
    before it)."""
    game = load_game("dots-and-boxes", width=p.width, height=p.height)
    state = game.new_state()
    kinds = []
    for ln in p.moves:
        vals = valences(state, p.width, p.height)
        free = state.legal_actions()
        caps = [a for a in free if any(vals[b] == 3 for b in boxes_of(p.width, p.height, a))]
        safe = [a for a in free if all(vals[b] < 2 for b in boxes_of(p.width, p.height, a))]
        kind = "capture" if ln in caps else "safe" if ln in safe else "gives"
        kinds.append((kind, bool(caps), bool(safe)))
        state.play(game.action_to_move(ln))
    return state, kinds


def boxes_of(w: int, h: int, line: int) -> list[int]:
    """The boxes a line borders (the layout of test_search_exact's ``brute``)."""
    nh = (h + 1) * w
    if line < nh:
        r, c = divmod(line, w)
        return [b for b, ok in (((r - 1) * w + c, r > 0), (r * w + c, r < h)) if ok]
    r, c = divmod(line - nh, w + 1)
    return [b for b, ok in ((r * w + c - 1, c > 0), (r * w + c, c < w)) if ok]


def valences(state, w: int, h: int) -> list[int]:
    return [state.valence(b % w + 1, b // w + 1) for b in range(w * h)]


def check_position(p: GeneratedPosition, w: int, h: int, undrawn: int):
    assert (p.width, p.height) == (w, h)
    assert len(p.moves) == num_lines(w, h) - undrawn == len(set(p.moves))
    assert p.undrawn == undrawn
    assert p.drawn == sum(1 << ln for ln in p.moves)
    state, kinds = replay(p)
    assert state.drawn == p.drawn
    if undrawn:
        assert state.to_move == p.to_move
    return state, kinds


#: Of the 15 random counts of undrawn lines tried per board, the fewest that must give a
#: position (safe_play may find no quiet one at a count on a small board; the seeds give 10
#: to 14 of 15).
MIN_CHECKED = 10


@pytest.mark.parametrize("w,h", SIZES)
def test_safe_play_positions_are_legal_quiet_and_follow_the_policy(w, h):
    """At least :data:`MIN_CHECKED` of 15 positions per board are checked; safe_play may refuse
    the others only for want of a quiet position at that count."""
    rng = random.Random(w * 10 + h)
    nl = num_lines(w, h)
    checked = 0
    for _ in range(15):
        undrawn = rng.randint(0, nl)
        try:
            p = safe_play(rng, w, h, undrawn)
        except ValueError as exc:
            assert 0 < undrawn and "no quiet position" in str(exc), (undrawn, exc)
            continue
        state, kinds = check_position(p, w, h, undrawn)
        checked += 1
        assert 3 not in valences(state, w, h)
        for kind, had_capture, had_safe in kinds:
            if had_capture:
                assert kind == "capture"
            elif had_safe:
                assert kind == "safe"
    assert checked >= MIN_CHECKED, f"only {checked} of 15 positions of {w}x{h} checked"


def test_safe_play_sacrifices_the_fewest_boxes():
    """On 3x3 near the end every line gives something: the sacrifice chosen hands over no more
    boxes in a row than any other line would."""
    rng = random.Random(4)
    game = load_game("dots-and-boxes", width=3, height=3)
    seen = positions = 0
    for _ in range(20):
        undrawn = rng.randint(0, 10)
        try:
            p = safe_play(rng, 3, 3, undrawn)
        except ValueError as exc:
            assert 0 < undrawn and "no quiet position" in str(exc), (undrawn, exc)
            continue
        positions += 1
        state = game.new_state()
        for ln in p.moves:
            vals = valences(state, 3, 3)
            free = state.legal_actions()
            gives_all = all(any(vals[b] >= 2 for b in boxes_of(3, 3, a)) for a in free)
            no_cap = not any(vals[b] == 3 for a in free for b in boxes_of(3, 3, a))
            if gives_all and no_cap:
                cost = {a: handed_over(game, state, a) for a in free}
                assert cost[ln] == min(cost.values())
                seen += 1
            state.play_unchecked(ln)
    assert positions >= MIN_CHECKED and seen >= 10, (positions, seen)


def handed_over(game, state, line: int) -> int:
    """Boxes the opponent takes in a row, greedily, after ``line`` is drawn."""
    s = game.from_lines(state.to_lines())
    s.play_unchecked(line)
    before = sum(s.scores)
    while True:
        vals = valences(s, 3, 3)
        caps = [a for a in s.legal_actions()
                if any(vals[b] == 3 for b in boxes_of(3, 3, a))]
        if not caps:
            return sum(s.scores) - before
        s.play_unchecked(caps[0])


@pytest.mark.parametrize("w,h", SIZES)
def test_biased_play_positions_are_legal(w, h):
    rng = random.Random(w * 7 + h)
    nl = num_lines(w, h)
    for _ in range(15):
        undrawn = rng.randint(0, nl)
        p = biased_play(rng, w, h, undrawn, rng.uniform(0.0, 1.0))
        check_position(p, w, h, undrawn)


def test_biased_play_with_p_safe_one_gives_nothing_away_while_it_can():
    rng = random.Random(8)
    for _ in range(20):
        p = biased_play(rng, 5, 5, rng.randint(20, 50), 1.0)
        _state, kinds = replay(p)
        for kind, had_capture, had_safe in kinds:
            if had_capture or had_safe:
                assert kind in ("capture", "safe")


def test_biased_play_with_p_safe_zero_hands_boxes_over():
    rng = random.Random(9)
    gave = 0
    for _ in range(10):
        p = biased_play(rng, 5, 5, 20, 0.0)
        _state, kinds = replay(p)
        gave += sum(1 for kind, _c, had_safe in kinds if kind == "gives" and had_safe)
    assert gave > 0


def test_both_are_deterministic_for_a_seed():
    for seed in range(5):
        assert safe_play(random.Random(seed), 5, 5, 40) == safe_play(random.Random(seed), 5, 5, 40)
        a = biased_play(random.Random(seed), 5, 5, 38, 0.8)
        assert a == biased_play(random.Random(seed), 5, 5, 38, 0.8)
    assert len({safe_play(random.Random(s), 5, 5, 40).drawn for s in range(10)}) == 10


def test_the_dataclass_is_frozen_and_arguments_are_checked():
    p = safe_play(random.Random(1), 2, 2, 12)
    assert p == GeneratedPosition(2, 2, 0, 0, ())
    with pytest.raises(AttributeError):
        p.drawn = 1  # type: ignore[misc]
    with pytest.raises(ValueError):
        safe_play(random.Random(1), 2, 2, 13)
    with pytest.raises(ValueError):
        biased_play(random.Random(1), 2, 2, -1, 0.5)
    with pytest.raises(ValueError):
        biased_play(random.Random(1), 2, 2, 3, 1.5)


@pytest.mark.parametrize("w, h", [(3, 3), (4, 3), (5, 5)])
def test_the_canonical_form_is_shared_by_every_image_and_maps_lines(w, h):
    """Every image of a position under the board's symmetries has the same canonical form,
    and ``syms[s]`` maps the position's lines onto the canonical one's."""
    from boxfish.engine.dots.search.board import tables

    t = tables(w, h)
    rng = random.Random(w * h)
    for _ in range(20):
        drawn = sum(1 << ln for ln in rng.sample(range(t.nl), t.nl // 2))
        canonical, s = t.canonical(drawn)
        assert sum(1 << t.syms[s][ln] for ln in range(t.nl) if drawn >> ln & 1) == canonical
        for k in range(len(t.syms)):
            assert t.canonical(t.permute(drawn, k))[0] == canonical
        assert canonical <= drawn
