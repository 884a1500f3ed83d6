"""Exact values of the Dots-and-Boxes search against a plain minimax written here."""

from __future__ import annotations

import random

import pytest

from boxfish.engine import analyse, load_game
from boxfish.engine.dots.geometry import bits
from boxfish.engine.dots.search.board import tables
from boxfish.engine.dots.search.node import Searcher, solve
from boxfish.engine.dots.search.table import INF, PROVEN, TranspositionTable


def brute(w: int, h: int, drawn: int) -> int:
    """Plain memoised minimax over every legal line: no knowledge, no pruning."""
    nl = (h + 1) * w + h * (w + 1)
    full = (1 << nl) - 1
    boxes = []
    for r in range(h):
        for c in range(w):
            top = r * w + c
            left = (h + 1) * w + r * (w + 1) + c
            boxes.append((1 << top) | (1 << left) | (1 << (left + 1)) | (1 << ((r + 1) * w + c)))
    memo: dict[int, int] = {}

    def completes(d: int, line: int) -> int:
        bit = 1 << line
        return sum(1 for m in boxes if m & bit and (d | bit) & m == m)

    def f(d: int) -> int:
        if d == full:
            return 0
        v = memo.get(d)
        if v is not None:
            return v
        best = -10 ** 9
        free = full & ~d
        for line in range(nl):
            if free >> line & 1:
                c = completes(d, line)
                v = c + f(d | 1 << line) if c else -f(d | 1 << line)
                best = max(best, v)
        memo[d] = best
        return best

    return f(drawn)


@pytest.mark.parametrize("w,h,expected", [(1, 1, -1), (2, 2, 2), (2, 3, -2), (3, 2, -2),
                                          (3, 3, -3)])
def test_spec_values_from_empty_board(w, h, expected):
    game = load_game("dots-and-boxes", width=w, height=h)
    a = analyse(game.new_state(), time_ms=None, multipv=1)
    assert a.exact and a.bound == "exact"
    assert a.value == expected


@pytest.mark.parametrize("w,h", [(1, 1), (1, 2), (2, 1), (1, 3), (1, 4), (2, 2), (2, 3)])
def test_empty_board_matches_brute_force(w, h):
    v, _ = solve(tables(w, h), 0)
    assert v == brute(w, h, 0)


def _random_position(rng, w, h, free):
    t = tables(w, h)
    drawn = 0
    for ln in rng.sample(range(t.nl), max(0, t.nl - free)):
        drawn |= 1 << ln
    return drawn


def test_many_random_positions_match_brute_force():
    rng = random.Random(20260521)
    sizes = [(2, 2), (2, 3), (3, 2), (3, 3), (1, 4), (2, 4), (4, 2)]
    for i in range(400):
        w, h = rng.choice(sizes)
        t = tables(w, h)
        free = rng.randint(3, 13 if t.nb >= 8 else 12)
        drawn = _random_position(rng, w, h, free)
        v, _ = solve(t, drawn, symmetry=bool(i & 1))
        assert v == brute(w, h, drawn), (w, h, bin(drawn))


def _safe_lines(t, drawn):
    """(undrawn lines, the undrawn lines that bring no box to valence 3)."""
    vals = t.valences(drawn)
    free = bits(t.full & ~drawn)
    return free, [ln for ln in free if all(vals[b] < 2 for b in t.line_boxes[ln])]


def _draw_safe_lines(rng, t, stop):
    """From the empty board, draw random safe lines until ``stop(safe_lines)`` says so."""
    drawn = 0
    while True:
        _free, safe = _safe_lines(t, drawn)
        if stop(safe):
            return drawn
        drawn |= 1 << rng.choice(safe)


def test_positions_from_play_match_brute_force():
    """Positions reached by plausible play (safe lines first), where chains form."""
    rng = random.Random(7)
    for _ in range(120):
        w, h = rng.choice([(2, 3), (3, 3), (2, 4), (3, 4)])
        t = tables(w, h)
        drawn = 0
        target = rng.randint(6, 13)
        while (t.full & ~drawn).bit_count() > target:
            free, safe = _safe_lines(t, drawn)
            drawn |= 1 << rng.choice(safe or free)
        v, _ = solve(t, drawn)
        assert v == brute(w, h, drawn), (w, h, bin(drawn))


def test_every_move_value_of_analysis_is_exact_and_right():
    game = load_game("dots-and-boxes", width=2, height=2)
    state = game.new_state()
    state.play((1, 1, 1))
    state.play((2, 2, 2))
    a = analyse(state, time_ms=None)
    t = tables(2, 2)
    assert len(a.moves) == len(state.legal_moves())
    assert [m.value for m in a.moves] == sorted((m.value for m in a.moves), reverse=True)
    for mv in a.moves:
        assert mv.exact and mv.bound == "exact"
        line = t.geo.line_id(*mv.move)
        c = t.completes(state.drawn, line)
        child = brute(2, 2, state.drawn | 1 << line)
        assert mv.value == (c + child if c else -child)
    assert a.value == brute(2, 2, state.drawn)
    assert a.best_move == a.moves[0].move
    assert a.pv and a.pv[0] == a.best_move


def test_capture_keeps_the_turn_and_values_add():
    # 1x2 board with the left box capturable: taking it is +1 and the mover moves again
    game = load_game("dots-and-boxes", width=2, height=1)
    state = game.new_state()
    for m in [(1, 1, 1), (1, 2, 1), (1, 1, 2)]:
        state.play(m)
    a = analyse(state, time_ms=None)
    assert a.exact and a.value == brute(2, 1, state.drawn)


def test_symmetric_positions_have_equal_values():
    rng = random.Random(3)
    t = tables(3, 3)
    for _ in range(30):
        drawn = _random_position(rng, 3, 3, rng.randint(6, 11))
        v0, _ = solve(t, drawn, symmetry=False)
        for s in range(len(t.syms)):
            assert solve(t, t.permute(drawn, s), symmetry=False)[0] == v0


def test_small_transposition_table_stays_bounded_and_correct():
    tt = TranspositionTable(max_entries=500)
    t = tables(2, 3)
    s = Searcher(t, tt=tt)
    assert s.search(0, -INF, INF, PROVEN) == -2
    assert len(tt) <= 500
    assert tt.evictions > 0


def test_game_over_position():
    game = load_game("dots-and-boxes", width=1, height=1)
    state = game.new_state()
    for m in state.legal_moves():
        state.play(m)
    a = analyse(state, time_ms=100)
    assert a.best_move is None and a.exact and a.value == 0 and a.moves == []


def test_sacrifices_of_chains_at_joints_match_brute_force():
    """Loony-ish positions where chains end at joints (valence 0/1 boxes): the search opens
    one line per such chain (any line of a 3+ chain, the middle of a 2-chain), which must
    not change a value."""
    rng = random.Random(4242)
    checked = 0
    for _ in range(400):
        if checked >= 40:
            break
        w, h = rng.choice([(3, 3), (2, 4), (4, 2), (2, 3)])
        t = tables(w, h)
        drawn = _draw_safe_lines(rng, t, lambda safe: not safe)
        vals = t.valences(drawn)
        if not any(v <= 1 for v in vals) or (t.full & ~drawn).bit_count() > 14:
            continue
        checked += 1
        v, _ = solve(t, drawn, symmetry=bool(checked & 1))
        assert v == brute(w, h, drawn), (w, h, bin(drawn))
    assert checked >= 20


def _twinsort(t, drawn: int) -> int:
    """``drawn`` with the drawn lines of each twin group moved to the group's lowest ids."""
    for g in t.twin_groups:
        n = sum(1 for ln in g if drawn >> ln & 1)
        for i, ln in enumerate(g):
            drawn = drawn | 1 << ln if i < n else drawn & ~(1 << ln)
    return drawn


def _perm(t, drawn: int, s: int) -> int:
    """The image of ``drawn`` under symmetry ``s``, line by line."""
    return sum(1 << t.syms[s][ln] for ln in bits(drawn))


def _key_by_definition(t, drawn: int, symmetry: bool = True) -> tuple[int, int]:
    """min over the symmetries s (identity first) of twinsort(perm_s(drawn)); the index of
    the first s reaching it."""
    best, bs = None, 0
    for s in range(len(t.syms) if symmetry else 1):
        k = _twinsort(t, _perm(t, drawn, s))
        if best is None or k < best:
            best, bs = k, s
    return best, bs


@pytest.mark.parametrize("w,h", [(1, 1), (1, 4), (2, 2), (3, 3), (2, 5), (3, 4), (4, 4), (5, 5),
                                 (5, 6), (6, 6), (7, 7), (9, 9), (10, 10)])
def test_the_key_is_its_definition_on_every_board_size(w, h):
    """One key for every size (boards of more than 64 lines used to take the smallest raw
    image first and twin-sort it after): the smallest twin-sorted image, the first symmetry
    reaching it; and the permutations are the symmetries' (boards of more than
    ``SYM_MAX_LINES`` lines: the identity only)."""
    from boxfish.engine.dots.search.board import SYM_MAX_LINES
    t = tables(w, h)
    assert len(t.syms) == (1 if t.nl > SYM_MAX_LINES else len(set(t.syms)))
    assert len(t.syms) > 1 or t.nl > SYM_MAX_LINES
    rng = random.Random(w * 100 + h)
    for _ in range(100):
        d = rng.getrandbits(t.nl) & rng.getrandbits(t.nl)  # a quarter of the lines
        assert t.key(d) == _key_by_definition(t, d)
        assert t.key(d, symmetry=False) == _key_by_definition(t, d, symmetry=False)
        s = rng.randrange(len(t.syms))
        assert t.permute(d, s) == _perm(t, d, s)


def test_every_line_of_a_chain_at_a_joint_is_worth_the_same():
    """The claim behind opening one line per chain that ends at a joint: every line of a
    1-chain or of a 3+ chain (ends at distinct boxes or the border) is worth the same to the
    opener, and the middle of a 2-chain is worth at least as much as its ends."""
    from boxfish.engine.dots.chain_dp import chain_lines
    rng = random.Random(515)
    checked = 0
    for _ in range(300):
        if checked >= 25:
            break
        w, h = rng.choice([(3, 3), (2, 4), (4, 2)])
        t = tables(w, h)
        drawn = _draw_safe_lines(rng, t, lambda safe: len(safe) <= rng.randint(0, 2))
        if (t.full & ~drawn).bit_count() > 13:
            continue
        vals = t.valences(drawn)
        for _loop, n, lines, ind in chain_lines(t, drawn, vals):
            if ind:
                continue
            ja = [b for b in t.line_boxes[lines[0]] if vals[b] != 2]
            jb = [b for b in t.line_boxes[lines[-1]] if vals[b] != 2]
            if n >= 3 and ja and ja == jb:
                continue
            worth = [-brute(w, h, drawn | 1 << ln) for ln in lines]
            if n == 2:
                assert worth[1] >= max(worth), (w, h, bin(drawn), worth)
            else:
                assert len(set(worth)) == 1, (w, h, bin(drawn), lines, worth)
            checked += 1
    assert checked >= 10


def test_isolated_chains_and_loops_of_one_length_are_worth_the_same():
    """The search opens one isolated chain (both ends on the border) or loop per kind and
    length: opening any of them must be worth the same."""
    from boxfish.engine.dots.chain_dp import chain_lines
    rng = random.Random(616)
    checked = 0
    for _ in range(600):
        if checked >= 12:
            break
        w, h = rng.choice([(3, 3), (2, 4), (4, 2), (2, 5)])
        t = tables(w, h)
        drawn = _draw_safe_lines(rng, t, lambda safe: len(safe) <= rng.randint(0, 2))
        if (t.full & ~drawn).bit_count() > 13:
            continue
        vals = t.valences(drawn)
        groups: dict = {}
        for loop, n, lines, ind in chain_lines(t, drawn, vals):
            if ind:
                groups.setdefault((loop, n), []).append(lines[1] if n == 2 and not loop
                                                       else lines[0])
        for lines in groups.values():
            if len(lines) > 1:
                worth = {-brute(w, h, drawn | 1 << ln) for ln in lines}
                assert len(worth) == 1, (w, h, bin(drawn), lines, worth)
                checked += 1
    assert checked >= 5


def _swap_twins(t, drawn: int, rng: random.Random) -> int:
    """``drawn`` with the drawn/undrawn pattern of every box's border lines shuffled."""
    for g in t.twin_groups:
        on = [ln for ln in g if drawn >> ln & 1]
        for ln in g:
            drawn &= ~(1 << ln)
        for ln in rng.sample(g, len(on)):
            drawn |= 1 << ln
    return drawn


@pytest.mark.parametrize("w,h", [(1, 1), (1, 3), (2, 2), (2, 3), (3, 3), (3, 4), (5, 5)])
def test_key_is_invariant_under_twin_swaps_and_symmetries(w, h):
    t = tables(w, h)
    rng = random.Random(w * 31 + h)
    for _ in range(200):
        d = rng.getrandbits(t.nl)
        k, s = t.key(d)
        for _ in range(3):
            other = t.permute(_swap_twins(t, d, rng), rng.randrange(len(t.syms)))
            assert t.key(other)[0] == k
        # the symmetry index names the frame: the key is an image of the twin-sorted drawn
        assert t.key(t.permute(d, s), symmetry=False)[0] == k


@pytest.mark.parametrize("w,h", [(1, 3), (2, 2), (2, 3), (3, 2)])
def test_positions_with_equal_keys_have_equal_values(w, h):
    """Twin lines (a box's border lines) really are interchangeable: brute force agrees."""
    t = tables(w, h)
    rng = random.Random(7 * w + h)
    checked = 0
    for _ in range(60):
        d = _random_position(rng, w, h, rng.randint(2, t.nl - 6))
        other = _swap_twins(t, d, rng)
        if other == d:
            continue
        checked += 1
        assert t.key(other)[0] == t.key(d)[0]
        assert brute(w, h, other) == brute(w, h, d), (w, h, bin(d), bin(other))
    assert checked >= 15


def test_twin_lines_are_searched_once_and_the_tt_move_maps_back():
    t = tables(3, 3)
    s = Searcher(t)
    safe, unsafe = s.gen_safe(0, [0] * 9)
    assert unsafe == 0
    # 24 lines, 4 corners with two border lines each: 20 candidates
    assert len(safe) == 20
    for g in t.twin_groups:
        assert sum(1 for ln in g if ln in safe) == 1
    # a TT move stored in the key's frame comes back as an undrawn line of the position
    rng = random.Random(5)
    for _ in range(200):
        d = _random_position(rng, 3, 3, rng.randint(1, 14))
        key, sym = t.key(d)
        free = [ln for ln in range(t.nl) if not key >> ln & 1]
        if not free:
            continue
        m = rng.choice(free)
        ln = t.from_key_frame(d, m, sym)
        assert 0 <= ln and not d >> ln & 1
        # and drawing it gives a position with the same key as drawing m in the key's frame
        assert t.key(d | 1 << ln)[0] == t.key(key | 1 << m)[0]


@pytest.mark.parametrize("w,h", [(3, 3), (2, 4), (3, 2), (5, 6)])
def test_keys_handed_to_children_equal_keys_computed_from_scratch(w, h):
    """The enhanced transposition cutoff derives the children's keys from the parent's
    images; each must equal ``Tables.key`` of the child, frame included."""
    t = tables(w, h)
    s = Searcher(t, record_keys=True)
    s.etc_min_free = 0
    seen = 0
    rng = random.Random(w * h)
    for _ in range(6):
        drawn = _random_position(rng, w, h, t.nl - rng.randint(0, 4))
        # (5x6, 65 lines: the packed images of a board of more than 64 lines; a shallow
        # heuristic search)
        s.search(drawn, -INF, INF, PROVEN if t.nl <= 24 else 2)
    for parent, handed in s.handed_keys:
        for line, (key, sym, _raw, _srt) in handed.items():
            child = parent | 1 << line
            assert t.key(child)[0] == key
            assert t.key(t.permute(child, sym), symmetry=False)[0] == key
            seen += 1
    assert seen > 100
