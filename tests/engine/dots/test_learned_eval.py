"""The learned evaluation (``engine/dots/search/learned.py``, ``core/evaluate.c``): the same
features and values in Python and C, the choice of evaluation, exact values that do not depend
on it (against the independent reference solver), the model file, and training end to end."""

from __future__ import annotations

import random
import time

import numpy as np
import pytest

from boxfish.engine.analysis import Limit
from boxfish.engine.dots.learn import train
from boxfish.engine.dots.learn.data import Job, run
from boxfish.engine.dots.positions import biased_play, safe_play
from boxfish.engine.dots.search import compiled, learned
from boxfish.engine.dots.search.board import tables
from boxfish.engine.dots.search.driver import analyse_position
from boxfish.engine.dots.search.evaluate import Evaluator
from boxfish.engine.errors import SearchAborted
from tests.engine.dots.reference import reference_move_values

pytestmark = pytest.mark.skipif(not compiled.available(), reason="needs the compiled core")


def _random_model(w: int, h: int, seed: int = 0, trees: int = 30, depth: int = 4,
                  max_undrawn: int | None = None) -> learned.Model:
    """Random trees over every feature (thresholds in the features' ranges), so that
    positions reach many leaves."""
    t = tables(w, h)
    rng = np.random.default_rng(seed)
    nf = learned.feature_count(t)
    feature, threshold, left, right, value, roots = [], [], [], [], [], []

    def add(d: int) -> int:
        i = len(feature)
        for a in (feature, threshold, left, right, value):
            a.append(0)
        if d == depth:
            feature[i] = -1
            value[i] = int(rng.integers(-3 << 16, 3 << 16))
            return i
        feature[i] = int(rng.integers(nf))
        threshold[i] = float(rng.integers(-4, 12)) + 0.5
        left[i] = add(d + 1)
        right[i] = add(d + 1)
        return i

    for _ in range(trees):
        roots.append(add(0))
    return learned.Model(w, h, nf, 16, feature, threshold, left, right, value, roots,
                         t.nl if max_undrawn is None else max_undrawn,
                         {"feature_version": learned.FEATURE_VERSION})


def _quiet_positions(w: int, h: int, n: int, seed: int) -> list[int]:
    """Positions with no box to take, half from each generator, at every depth."""
    t = tables(w, h)
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        u = rng.randrange(1, t.nl)
        try:
            p = (safe_play(rng, w, h, u) if len(out) % 2
                 else biased_play(rng, w, h, u, 0.8))
        except ValueError:  # no quiet position that deep
            continue
        if all((p.drawn & m).bit_count() != 3 for m in t.box_mask):
            out.append(p.drawn)
    return out


def _core(t):
    return compiled.core(t, compiled.new_table(1 << 20, t.nl), True, SearchAborted,
                         time.perf_counter)


@pytest.fixture
def model_on(request):
    """``model_on(w, h, model)``: that board's model for the test (put back afterwards)."""
    saved = []

    def put(w, h, model):
        t = tables(w, h)
        saved.append((t, t.learned_model))
        t.learned_model = model if model is not None else False
    yield put
    for t, m in reversed(saved):
        t.learned_model = m


@pytest.mark.parametrize("w,h", [(3, 3), (4, 4), (4, 5), (5, 5), (7, 6)])
def test_features_and_values_are_the_same_in_python_and_c(w, h):
    t = tables(w, h)
    core = _core(t)
    ev = Evaluator(t)
    model = _random_model(w, h)
    # the trees alone (no leaf takes control's sign), and with control
    le = learned.LearnedEvaluator(ev, model, control_moves=0)
    cmodel = compiled.model(model, 0)
    le_control = learned.LearnedEvaluator(ev, model)
    core_control = _core(t)
    core_control.model = compiled.model(model)
    values = set()
    for drawn in _quiet_positions(w, h, 60, seed=w * 10 + h):
        vals = [(drawn & m).bit_count() for m in t.box_mask]
        x = learned.features(ev, drawn, vals)
        assert core.features(drawn) == x
        assert len(x) == learned.feature_count(t)
        core.model = None
        assert core.evaluate(drawn) == ev.evaluate(drawn, vals)
        core.model = cmodel
        v = core.evaluate(drawn)
        assert v == le.evaluate(drawn, vals) == model.value_of(x, sum(b < 4 for b in vals))
        assert abs(v) <= sum(b < 4 for b in vals)
        values.add(v)
        assert core_control.evaluate(drawn) == le_control.evaluate(drawn, vals)
    assert len(values) > 3  # the network is not stuck at its clamp


def test_past_its_undrawn_lines_a_model_leaves_the_value_to_the_fill_evaluation():
    """Trees know nothing past their data: a position of more undrawn lines than the model's
    ``max_undrawn`` gets the fill evaluation's value, in Python and C alike."""
    t = tables(4, 4)
    model = _random_model(4, 4, 4, max_undrawn=20)
    ev = Evaluator(t)
    le = learned.LearnedEvaluator(ev, model, control_moves=0)
    core = _core(t)
    core.model = compiled.model(model, 0)
    fill = _core(t)
    seen = {"fill": 0, "model": 0}
    for drawn in _quiet_positions(4, 4, 80, seed=5):
        vals = [(drawn & m).bit_count() for m in t.box_mask]
        got = core.evaluate(drawn)
        assert got == le.evaluate(drawn, vals)
        if (t.full & ~drawn).bit_count() > 20:
            assert got == fill.evaluate(drawn)
            seen["fill"] += 1
        else:
            assert got == model.value_of(learned.features(ev, drawn, vals),
                                         sum(b < 4 for b in vals))
            seen["model"] += 1
    assert min(seen.values()) > 10


def test_the_evaluation_memo_follows_a_change_of_model():
    """The compiled memo of leaf values is emptied when the evaluation changes: a model,
    then none, then another model each give their own values."""
    t = tables(4, 4)
    core = _core(t)
    a, b = compiled.model(_random_model(4, 4, 1)), compiled.model(_random_model(4, 4, 2))
    positions = _quiet_positions(4, 4, 40, seed=3)
    fresh = {}
    for name, m in (("a", a), ("fill", None), ("b", b)):
        c = _core(t)
        c.model = m
        fresh[name] = [c.evaluate(d) for d in positions]
    for name, m in (("a", a), ("fill", None), ("b", b), ("a", a)):
        core.model = m
        assert [core.evaluate(d) for d in positions] == fresh[name], name
    assert fresh["a"] != fresh["fill"] != fresh["b"]


def test_bad_inputs_are_refused():
    t = tables(3, 3)
    core = _core(t)
    with pytest.raises(ValueError, match="box can be taken"):
        m = t.box_mask[0]
        core.evaluate(m & (m - 1))  # three sides of the first box
    with pytest.raises(ValueError, match="beyond"):
        core.features(1 << t.nl)
    with pytest.raises(ValueError, match="features"):
        core.model = compiled.model(_random_model(4, 4))
    with pytest.raises(TypeError):
        core.model = "learned"


def test_the_choice_of_evaluation(model_on):
    model_on(3, 3, None)
    model_on(3, 4, _random_model(3, 4))
    assert learned.resolve_evaluation(None, tables(3, 3)) == "fill"
    assert learned.resolve_evaluation(None, tables(3, 4)) == "learned"
    assert learned.resolve_evaluation("fill", tables(3, 4)) == "fill"
    with pytest.raises(ValueError, match="no learned evaluation for a 3x3"):
        analyse_position(3, 3, 0, Limit(depth=2), evaluation="learned")
    with pytest.raises(ValueError, match="evaluation must be one of"):
        analyse_position(3, 4, 0, Limit(depth=2), evaluation="neural")


@pytest.mark.parametrize("evaluation", ["learned", "fill"])
def test_both_cores_search_alike_with_either_evaluation(model_on, evaluation):
    """Node for node: value, bound, moves, principal variation, nodes."""
    model_on(4, 4, _random_model(4, 4, 5))
    for drawn in _quiet_positions(4, 4, 3, seed=7):
        for limit in (Limit(depth=4), Limit(nodes=20_000)):
            py = analyse_position(4, 4, drawn, limit, 3, core="python", evaluation=evaluation)
            c = analyse_position(4, 4, drawn, limit, 3, core="c", evaluation=evaluation)
            assert _fields(c) == _fields(py)


def test_a_heuristic_search_depends_on_the_evaluation(model_on):
    model_on(5, 5, _random_model(5, 5, 6))
    drawn = safe_play(random.Random(11), 5, 5, 44).drawn
    a = [analyse_position(5, 5, drawn, Limit(depth=3), 5, evaluation=e) for e in
         ("learned", "fill")]
    assert not a[0].exact and not a[1].exact
    assert [m.value for m in a[0].moves] != [m.value for m in a[1].moves]


@pytest.mark.parametrize("w,h,undrawn", [(3, 4, (10, 14, 18)), (4, 4, (14, 18))])
def test_exact_values_do_not_depend_on_the_evaluation(model_on, w, h, undrawn):
    """Solved with a (random) learned evaluation, every move's value is the reference
    solver's, on positions of both generators."""
    model_on(w, h, _random_model(w, h, 8))
    t = tables(w, h)
    rng = random.Random(w * h)
    for u in undrawn:
        for p in (safe_play(rng, w, h, u), biased_play(rng, w, h, u, 0.8)):
            drawn = p.drawn
            a = analyse_position(w, h, drawn, multipv=t.nl, solve=True, evaluation="learned")
            got = {t.moves.index(tuple(m.move)): m.value for m in a.moves}
            assert a.exact and all(m.exact for m in a.moves)
            assert got == reference_move_values(w, h, drawn)


def test_a_model_file_round_trips_and_is_checked(tmp_path):
    m = _random_model(3, 3)
    m.info["note"] = "x"
    path = tmp_path / "m.npz"
    m.save(path)
    back = learned.Model.load(path)
    for name in ("feature", "threshold", "left", "right", "value", "roots"):
        assert np.array_equal(getattr(back, name), getattr(m, name))
    assert (back.shift, back.features, back.max_undrawn, back.info) == (
        m.shift, m.features, m.max_undrawn, m.info)
    m.info["feature_version"] = learned.FEATURE_VERSION + 1
    m.save(path)
    with pytest.raises(ValueError, match="feature version"):
        learned.Model.load(path)
    with pytest.raises(ValueError, match="different lengths"):
        learned.Model(3, 3, m.features, 16, m.feature, m.threshold[:-1], m.left, m.right,
                      m.value, m.roots, m.max_undrawn)
    loop = m.left.copy()
    loop[0] = 0  # a split whose child is itself: a walk that never ends
    with pytest.raises(ValueError, match="outside the model"):
        learned.Model(3, 3, m.features, 16, m.feature, m.threshold, loop, m.right, m.value,
                      m.roots, m.max_undrawn)
    with pytest.raises(ValueError, match="refers outside"):
        compiled._core.Model(m.features, 16, m.feature.astype("<i4").tobytes(),
                             m.threshold.tobytes(), loop.astype("<i4").tobytes(),
                             m.right.astype("<i4").tobytes(), m.value.astype("<i4").tobytes(),
                             m.roots.astype("<i4").tobytes(), m.max_undrawn)


def test_training_end_to_end(tmp_path, model_on, capsys):
    """Exact data, the training command, the model it writes, and an analysis with it."""
    job = Job(3, 3, (10, 12, 14, 16), 10, 1, tmp_path / "data", workers=0)
    out = run(job)
    assert out.solved == 4 * 10 * 3
    path = tmp_path / "3x3.npz"
    assert train.main(["--board", "3x3", "--dir", str(tmp_path / "data"), "--out", str(path),
                       "--trees", "40", "--leaves", "8", "--covered", "50"]) == 0
    m = learned.Model.load(path)
    assert m.trees == 40 and m.features == learned.feature_count(tables(3, 3))
    assert m.max_undrawn == 16  # the most undrawn lines with --covered samples: the data's
    info = m.info
    assert info["board"] == "3x3" and info["samples"] > info["validate"] > 0
    assert sum(f["positions"] for f in info["data"]) == 120
    assert 0 <= info["validation"]["mae"] and 0 <= info["validation"]["sign"] <= 1
    assert "validation: learned" in capsys.readouterr().err
    model_on(3, 3, m)
    a = analyse_position(3, 3, 0, Limit(depth=5), evaluation="learned")
    b = analyse_position(3, 3, 0, Limit(depth=5), evaluation="learned", core="python")
    assert _fields(a) == _fields(b)


def test_training_refuses_a_folder_without_data(tmp_path, capsys):
    assert train.main(["--board", "3x3", "--dir", str(tmp_path)]) == 1
    assert "no solved data" in capsys.readouterr().err


def test_samples_are_the_positions_and_their_quiet_children():
    """A solved record gives itself (when quiet) and each child after a safe move, with the
    child's value for its player to move; every image under the board's symmetries too."""
    t = tables(3, 3)
    drawn = safe_play(random.Random(2), 3, 3, 14).drawn
    values = reference_move_values(3, 3, drawn)
    rec = {"u": 14, "i": 0, "drawn": hex(drawn), "value": max(values.values()),
           "values": [values[ln] for ln in sorted(values)]}
    s = train.samples(t, [rec], symmetries=False)
    assert s.by_drawn[drawn] == (rec["value"], False)
    for ln, v in values.items():
        child = drawn | 1 << ln
        if all((child & m).bit_count() != 3 for m in t.box_mask):
            assert s.by_drawn[child] == (-v, False)
    assert len(train.samples(t, [rec]).by_drawn) > len(s.by_drawn)


def _fields(a):
    d = a.to_dict()
    for volatile in ("time_ms", "nps", "core"):
        d.pop(volatile)
    return d


def test_a_cache_searched_with_another_evaluation_starts_empty(model_on):
    """A ``DotsCaches`` kept between analyses: switching the evaluation empties its tables,
    so the answer is the one fresh caches give (no heuristic value of the other evaluation
    is read); keeping the evaluation keeps them."""
    from boxfish.engine.dots.search.caches import DotsCaches

    model_on(4, 4, _random_model(4, 4, 9))
    t = tables(4, 4)
    drawn = _quiet_positions(4, 4, 1, seed=12)[0]
    for core in ("c", "python"):
        caches = DotsCaches(t)
        analyse_position(4, 4, drawn, Limit(depth=5), 3, caches=caches, core=core,
                         evaluation="fill")
        kept = len(caches)
        analyse_position(4, 4, drawn, Limit(depth=5), 3, caches=caches, core=core,
                         evaluation="fill")
        assert len(caches) >= kept > 0
        warm = analyse_position(4, 4, drawn, Limit(depth=5), 3, caches=caches, core=core,
                                evaluation="learned")
        fresh = analyse_position(4, 4, drawn, Limit(depth=5), 3, core=core,
                                 evaluation="learned")
        assert _fields(warm) == _fields(fresh)


def test_the_evaluation_through_the_library_and_the_command_line():
    """``engine.analysis.analyse(evaluation=...)`` and ``boxfish analyse --evaluation``:
    either evaluation on 5x5 gives the reference solver's exact value; the option is
    refused for Extreme Tic-Tac-Toe and a name it does not know."""
    import json
    import subprocess
    import sys

    from boxfish.engine.analysis import analyse
    from boxfish.engine.game import load_game

    game = load_game("dots-and-boxes", width=5, height=5)
    t = tables(5, 5)
    drawn = safe_play(random.Random(3), 5, 5, 18).drawn
    lines = "".join("1" if drawn >> ln & 1 else "0" for ln in range(t.nl))
    exact = reference_move_values(5, 5, drawn)
    evaluations = ["fill"] + (["learned"] if learned.model_for(t) is not None else [])
    for e in evaluations:
        a = analyse(game.from_lines(lines), time_ms=None, evaluation=e)
        assert a.exact and a.value == max(exact.values())
        out = subprocess.run([sys.executable, "-m", "boxfish.engine.cli", "--size", "5x5",
                              "--lines", lines, "--time", "0", "--evaluation", e, "--json"],
                             capture_output=True, text=True, check=True).stdout
        assert json.loads(out)["value"] == max(exact.values())
    xttt = load_game("extreme-tictactoe")
    with pytest.raises(ValueError, match="evaluation applies to dots-and-boxes"):
        analyse(xttt.new_state(), time_ms=10, evaluation="fill")
    bad = subprocess.run([sys.executable, "-m", "boxfish.engine.cli", "--size", "3x3",
                          "--evaluation", "neural"], capture_output=True, text=True)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr
