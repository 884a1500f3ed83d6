"""Exact-solve speed of the Dots-and-Boxes search, both cores (issue 3).

Sections (``--skip`` takes a comma list of their names; all run by default, in this order):

* ``openspiel``: OpenSpiel's Python ``alpha_beta_search`` on 2x2 (win/draw/loss only).
* ``cores``: nodes per second of the compiled (C) core and the Python core on the same
  searches: exact solves of 3x3, 2x5 and 3x4 from the empty board, and node-limited searches
  (``--core-nodes``) of ``--core-positions`` 5x5 positions with 40 undrawn lines. Both must
  report the same nodes, value, bound and best move (the run fails otherwise).
* ``empty``: exact solves of the empty ``--boards`` by our search (compiled core) against a
  plain negamax written here (alpha-beta, TT keyed by the lines, captures first, nothing
  else; capped by ``--plain-cap``), with the speed-up.
* ``3x4``: the compiled core's exact solve of 3x4 (value 0).
* ``4x4``: the compiled core's solve of 4x4 (value 0, Barker & Korf 2012) with a table of
  ``--table-gb`` GiB, capped by ``--cap`` seconds (reports how far each root move got).
* ``positions``: ``--positions`` 5x5 positions with ``--undrawn`` undrawn lines (random play
  that avoids handing boxes over, ``--seed``) solved by the compiled core within 60 s each;
  ``--python-positions`` of them by the Python core too.
* ``deadlines``: 200 ms analyses (``engine.analyse(state, time_ms=...)``) of empty and
  mid-game positions on 5x5 (both cores), 10x10 and 20x20 (Python: over 128 lines): the
  elapsed wall time around the call, max and p95.
* ``match``: ``--match-games`` 5x5 games at ``--match-ms`` per move, compiled core against
  the Python core (alternating who starts): the compiled core's W/D/L and box margin.

    python bench/dots_solve_bench.py --skip match         # everything but the match
    python bench/dots_solve_bench.py --skip openspiel,cores,empty,3x4,4x4,positions,deadlines
    python bench/dots_solve_bench.py --skip match,4x4 --boards 3x3 --positions 5
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time

from boxfish.engine import SearchCache, load_game
from boxfish.engine import analyse as engine_analyse
from boxfish.engine.analysis import Limit
from boxfish.engine.dots.geometry import bits
from boxfish.engine.dots.search import driver as dots_search
from boxfish.engine.dots.search.board import tables
from boxfish.engine.dots.search.caches import DotsCaches
from boxfish.engine.dots.search.driver import analyse_position
from boxfish.engine.dots.search.table import TranspositionTable

INF = 1 << 20
MiB = 1 << 20
GiB = 1 << 30
SECTIONS = ("openspiel", "cores", "empty", "3x4", "4x4", "positions", "deadlines", "match")


def say(*args) -> None:
    print(*args, flush=True)


def table(head, rows) -> None:
    """A markdown table."""
    say("| " + " | ".join(head) + " |")
    say("|" + "---|" * len(head))
    for r in rows:
        say("| " + " | ".join(str(x) for x in r) + " |")
    say()


class Timeout(Exception):
    pass


def plain_solve(w: int, h: int, drawn: int, cap_s: float):
    """Baseline: negamax alpha-beta, TT (exact/lower/upper) keyed by the drawn lines,
    captures first; nothing else. Returns (value or None on timeout, nodes)."""
    t = tables(w, h)
    tt: dict[int, tuple[int, int]] = {}
    nodes = 0
    deadline = time.perf_counter() + cap_s
    box_mask = t.box_mask
    line_boxes = t.line_boxes

    def search(d: int, alpha: int, beta: int) -> int:
        nonlocal nodes
        nodes += 1
        if not nodes & 1023 and time.perf_counter() > deadline:
            raise Timeout
        if d == t.full:
            return 0
        e = tt.get(d)
        if e is not None:
            lo, hi = e
            if lo >= beta or lo == hi:
                return lo
            if hi <= alpha:
                return hi
        vals = [(d & m).bit_count() for m in box_mask]
        free = bits(t.full & ~d)
        caps = []
        rest = []
        for ln in free:
            c = 0
            for b in line_boxes[ln]:
                if vals[b] == 3:
                    c += 1
            (caps if c else rest).append((ln, c))
        a0 = alpha
        best = -INF
        for ln, c in caps + rest:
            if c:
                v = c + search(d | 1 << ln, alpha - c, beta - c)
            else:
                v = -search(d | 1 << ln, -beta, -alpha)
            if v > best:
                best = v
                if v > alpha:
                    alpha = v
                    if v >= beta:
                        break
        if best <= a0:
            tt[d] = (-INF, best)
        elif best >= beta:
            tt[d] = (best, INF)
        else:
            tt[d] = (best, best)
        return best

    sys.setrecursionlimit(10000)
    try:
        return search(drawn, -INF, INF), nodes
    except Timeout:
        return None, nodes


# transposition-table entries of the Python table of our solves in the "empty" section (None:
# the compiled core with a table of TABLE_MB MiB)
TT_ENTRIES = None
TABLE_MB = 256
# solves of each empty board: the figures are the fastest and the median (a shared host's
# timings vary by 10% and more from run to run; the node counts do not)
REPEAT = 1


def show_progress(p) -> None:
    say(f"    depth {p.depth:>2}  best {p.best_move}  value {p.value:+d}"
        f"{'' if p.exact else ' (estimate)'}  nodes {p.nodes}  {p.time_ms / 1000:.1f}s")


class RootWatch:
    """Keeps the root moves' results of the next analysis (the ``partial`` dict the driver
    fills as each root move's result is known), to report how far an unsolved search got:
    ``Analysis.moves`` of a ``multipv=1`` search holds only the best move."""

    def __enter__(self):
        self.partial = {}
        self._orig = dots_search.iterate

        def spy(*args, **kwargs):
            if kwargs.get("partial") is not None:
                self.partial = kwargs["partial"]
            return self._orig(*args, **kwargs)
        dots_search.iterate = spy
        return self

    def __exit__(self, *exc):
        dots_search.iterate = self._orig
        return False

    def report(self, t) -> str:
        """Each root move's last result: value and bound (``~`` for a heuristic one)."""
        rs = sorted(self.partial.values(), key=lambda r: (-r.value, r.action))
        return ", ".join(f"{t.moves[r.action]} {r.value:+d} {r.bound}"
                         f"{'' if r.solved else '~'}" for r in rs)


def ours(w, h, drawn, cap_s, progress=False, core="c", caches=None, tt=None):
    """Our exact solve as the engine runs it without a time limit (multipv=1, solve=True),
    capped at ``cap_s`` seconds. Returns (Analysis, seconds)."""
    t0 = time.perf_counter()
    a = analyse_position(w, h, drawn, Limit(time_ms=int(cap_s * 1000)), multipv=1,
                         on_progress=show_progress if progress else None, solve=True,
                         caches=caches, tt=tt, core=core)
    return a, time.perf_counter() - t0


def our_caches(w, h, table_bytes=None):
    """A fresh owner of the caches (``TABLE_MB`` MiB for the compiled table by default)."""
    return DotsCaches(tables(w, h), table_bytes=table_bytes or TABLE_MB * MiB)


def unsolved_status(a, cap, watch, t) -> str:
    return (f"not solved in {cap:.0f}s (depth {a.depth}, best {a.best_move}, {a.value:+d} "
            f"({a.bound})); root moves: {watch.report(t)}")


# ------------------------------------------------------------------------------------ cores

def core_searches(seed, count, nodes, cap):
    """The searches both cores run: (label, w, h, drawn, limit, solve)."""
    out = [(f"{w}x{h} solve", w, h, 0, Limit(time_ms=int(cap * 1000)), True)
           for w, h in ((3, 3), (2, 5), (3, 4))]
    rng = random.Random(seed)
    for i in range(count):
        d = random_position(rng, 5, 5, 40)
        out.append((f"5x5 #{i + 1} (40 undrawn) {nodes:,} nodes", 5, 5, d, Limit(nodes=nodes),
                    None))
    return out


def run_core(core, w, h, drawn, limit, solve):
    """One search by ``core`` with fresh caches large enough that neither table replaces an
    entry (the cores agree node for node only then): a 256 MiB compiled table (its pages are
    only touched as used), a Python table of up to 16M entries."""
    caches = DotsCaches(tables(w, h), 16_000_000 + 3 * (1 << 16), table_bytes=256 * MiB)
    if core == "c":
        caches.compiled_table()  # made before the clock starts
    t0 = time.perf_counter()
    a = analyse_position(w, h, drawn, limit, multipv=1, solve=solve, caches=caches, core=core)
    secs = time.perf_counter() - t0
    if core == "c":
        ev = caches.compiled.stats()["evictions"]
    else:
        ev = caches.tt.evictions
    entries = sum(caches.sizes().get(k, 0) for k in ("tt", "compiled"))
    return a, secs, ev, entries


def bench_cores(seed, count, nodes, cap, c_reps=3):
    say("## Nodes per second of both cores on the same searches (fresh caches each; the "
        f"compiled core's time: the fastest of {c_reps} runs)")
    # warm up both (imports, board tables, the first allocation)
    for core in ("c", "python"):
        analyse_position(3, 3, 0, Limit(nodes=2000), multipv=1, core=core)
    rows = []
    tot = {"c": [0, 0.0], "python": [0, 0.0]}
    mismatches = []
    for label, w, h, drawn, limit, solve in core_searches(seed, count, nodes, cap):
        res = {}
        for core in ("c", "python"):
            # the compiled core's time is the fastest of ``c_reps`` runs: its first run can
            # pay for the kernel's huge pages of the table (faulting, compaction after the
            # Python search freed its memory), which is not the core's speed
            runs = [run_core(core, w, h, drawn, limit, solve)
                    for _ in range(c_reps if core == "c" else 1)]
            a, secs, ev, entries = min(runs, key=lambda r: r[1])
            if len(runs) > 1:
                assert len({(r[0].nodes, r[0].value, r[0].best_move) for r in runs}) == 1
            res[core] = (a, secs)
            tot[core][0] += a.nodes
            tot[core][1] += secs
            say(f"  {label:<40} {core:<6} value {a.value:+d} {a.bound:<8} best {a.best_move}"
                f"  nodes {a.nodes:>10,}  {secs:7.2f}s  {a.nodes / secs:>11,.0f} nodes/s"
                f"  table entries {entries:,}  evictions {ev}"
                + (f"  (runs: {', '.join(f'{r[1]:.3f}' for r in runs)}s)" if len(runs) > 1
                   else ""))
        ac, sc = res["c"]
        ap, sp = res["python"]
        same = (ac.nodes, ac.value, ac.bound, ac.best_move) == \
            (ap.nodes, ap.value, ap.bound, ap.best_move)
        if not same:
            mismatches.append((label, w, h, hex(drawn), limit,
                               ("c", ac.nodes, ac.value, ac.bound, ac.best_move),
                               ("python", ap.nodes, ap.value, ap.bound, ap.best_move)))
            say(f"  !! THE CORES DISAGREE on {label} (drawn {drawn:#x}): {mismatches[-1]}")
        rows.append((label, f"{ac.value:+d} {ac.bound}", ac.best_move, f"{ac.nodes:,}",
                     f"{sc:.2f}", f"{sp:.2f}", f"{ac.nodes / sc:,.0f}", f"{ap.nodes / sp:,.0f}",
                     f"{sp / sc:.1f}x", "yes" if same else "**NO**"))
    cn, cs = tot["c"]
    pn, ps = tot["python"]
    rows.append(("**all**", "", "", f"{cn:,}" if cn == pn else f"{cn:,} / {pn:,}",
                 f"{cs:.2f}", f"{ps:.2f}", f"{cn / cs:,.0f}", f"{pn / ps:,.0f}",
                 f"{(cn / cs) / (pn / ps):.1f}x", "" if not mismatches else "**NO**"))
    say()
    table(("search", "value", "best", "nodes", f"c s (best of {c_reps})", "python s", "c nodes/s",
           "python nodes/s", "c/python", "same"), rows)
    if mismatches:
        raise AssertionError(f"the cores disagree on {len(mismatches)} search(es): "
                             f"{mismatches}")


# ------------------------------------------------------------------------------------ empty

def bench_empty(boards, cap, plain_cap=None):
    say("## Exact solve from the empty board (ours vs plain negamax + TT + captures first)")
    core = "python" if TT_ENTRIES else "c"
    say(f"  ours: the {core} core" + (f" with a table of {TT_ENTRIES:,} entries" if TT_ENTRIES
                                      else f" with a table of {TABLE_MB} MiB"))
    rows = []
    for w, h in boards:
        say(f"# {w}x{h} ...")
        times = []
        for i in range(REPEAT):
            # the same solve again from scratch: fresh caches (table, evaluation and chain DP
            # memos) each time
            tt = TranspositionTable(TT_ENTRIES) if TT_ENTRIES else None
            with RootWatch() as watch:
                a, secs = ours(w, h, 0, cap, progress=i == 0, core=core,
                               caches=None if tt else our_caches(w, h), tt=tt)
            times.append(secs)
        if REPEAT > 1:
            secs = min(times)
            say(f"  ours : {REPEAT} solves: fastest {secs:.2f}s, median "
                f"{statistics.median(times):.2f}s, slowest {max(times):.2f}s")
        status = f"{a.value:+d} exact" if a.exact else unsolved_status(a, cap, watch,
                                                                        tables(w, h))
        say(f"  ours : {status}  {secs:.2f}s  nodes {a.nodes}  nps {a.nps}")
        t0 = time.perf_counter()
        pcap = cap if plain_cap is None else plain_cap
        pv, pn = plain_solve(w, h, 0, pcap)
        psecs = time.perf_counter() - t0
        pstat = f"{pv:+d} exact" if pv is not None else f"not solved in {pcap:.0f}s"
        say(f"  plain: {pstat}  {psecs:.2f}s  nodes {pn}")
        if a.exact and pv is not None:
            assert a.value == pv, (w, h, a.value, pv)
            ratio = f"{psecs / secs:.0f}x"
        elif a.exact:
            ratio = f">{psecs / secs:.0f}x"
        else:
            ratio = "n/a"
        rows.append((f"{w}x{h}", status, f"{secs:.2f}", f"{a.nodes:,}", pstat, f"{psecs:.2f}",
                     f"{pn:,}", ratio))
    say()
    head = "ours s" if REPEAT == 1 else f"ours s (fastest of {REPEAT})"
    table(("board", "ours", head, "ours nodes", "plain", "plain s", "plain nodes", "speed-up"),
          rows)


# ------------------------------------------------------------------------------ 3x4 and 4x4

def bench_solve(w, h, cap, table_bytes, expect=None):
    """The compiled core's solve of the empty w x h board with a table of ``table_bytes``."""
    say(f"## Compiled solve of {w}x{h} from the empty board (table {table_bytes / GiB:g} GiB, "
        f"cap {cap:.0f}s)")
    t = tables(w, h)
    caches = our_caches(w, h, table_bytes)
    with RootWatch() as watch:
        a, secs = ours(w, h, 0, cap, progress=True, core="c", caches=caches)
    st = caches.compiled.stats()
    used = st["entries"] * 16 if t.nl <= 64 else st["entries"] * 32
    say(f"  value {a.value:+d}  exact {a.exact}  bound {a.bound}  best {a.best_move}  "
        f"nodes {a.nodes:,}  {secs:.1f}s  {a.nodes / secs:,.0f} nodes/s")
    say(f"  table: {st['entries']:,} entries used of {st['capacity']:,} "
        f"({used / GiB:.2f} GiB of entries; {st['nbytes'] / GiB:.2f} GiB allocated), "
        f"evictions {st['evictions']:,}, refused {st['refused']:,}")
    if not a.exact:
        say(f"  {unsolved_status(a, cap, watch, t)}")
    elif expect is not None and a.value != expect:
        say(f"  !! value {a.value:+d}, expected {expect:+d}")
    say()
    status = f"{a.value:+d} exact" if a.exact else f"not solved in {cap:.0f}s"
    table(("board", "result", "seconds", "nodes", "nodes/s", "table entries used",
           "entries x 16 B", "table allocated"),
          [(f"{w}x{h}", status, f"{secs:.1f}", f"{a.nodes:,}", f"{a.nodes / secs:,.0f}",
            f"{st['entries']:,} of {st['capacity']:,}", f"{used / GiB:.2f} GiB",
            f"{st['nbytes'] / GiB:.2f} GiB")])
    caches.clear()  # gives the table's memory back
    return a


# -------------------------------------------------------------------------------- openspiel

def bench_openspiel():
    say("## OpenSpiel alpha_beta_search on 2x2")
    try:
        import pyspiel
        from open_spiel.python.algorithms import minimax
    except ImportError as exc:  # pragma: no cover
        say(f"  open_spiel not available: {exc}")
        say()
        return
    game = pyspiel.load_game("dots_and_boxes(num_rows=2,num_cols=2)")
    t0 = time.perf_counter()
    value, action = minimax.alpha_beta_search(game, maximizing_player_id=0)
    os_secs = time.perf_counter() - t0
    say(f"  openspiel: value {value:+.0f} (win/draw/loss for player 0), action {action}, "
        f"{os_secs:.2f}s")
    for core in ("c", "python"):
        a, secs = ours(2, 2, 0, 60, core=core)
        say(f"  ours ({core:<6}): margin {a.value:+d} exact={a.exact}, best {a.best_move}, "
            f"{secs:.4f}s -> {os_secs / secs:.0f}x faster")
    say()


# -------------------------------------------------------------------------------- positions

def random_position(rng, w, h, undrawn):
    """Random play that takes boxes offered and avoids handing boxes over while it can."""
    t = tables(w, h)
    for _ in range(1000):
        d = 0
        while (t.full & ~d).bit_count() > undrawn:
            vals = t.valences(d)
            free = bits(t.full & ~d)
            caps = [ln for ln in free if any(vals[b] == 3 for b in t.line_boxes[ln])]
            if caps:
                d |= 1 << rng.choice(caps)
                continue
            safe = [ln for ln in free if all(vals[b] < 2 for b in t.line_boxes[ln])]
            d |= 1 << rng.choice(safe or free)
        vals = t.valences(d)
        if 3 not in vals:
            return d
    raise RuntimeError("no position found")


def bench_positions(n, undrawn, cap, seed, python_n=0, table_mb=256):
    say(f"## Exact solve of 5x5 positions with {undrawn} undrawn lines ({n} positions, seed "
        f"{seed}, compiled core, a fresh {table_mb} MiB table each, cap {cap:.0f}s)")
    rng = random.Random(seed)
    positions = [random_position(rng, 5, 5, undrawn) for _ in range(n)]
    times, results = [], []
    unsolved = 0
    for i, d in enumerate(positions):
        a, secs = ours(5, 5, d, cap, core="c", caches=our_caches(5, 5, table_mb * MiB))
        unsolved += not a.exact
        times.append(secs)
        results.append(a)
        say(f"  #{i + 1:>2}  value {a.value:+d}  exact={a.exact}  {secs:7.3f}s  "
            f"nodes {a.nodes:>12,}  drawn {d:#x}")
    say()
    table(("positions", "median s", "mean s", "max s", f"unsolved within {cap:.0f}s",
           "median nodes", "max nodes"),
          [(n, f"{statistics.median(times):.3f}", f"{statistics.mean(times):.3f}",
            f"{max(times):.3f}", unsolved, f"{statistics.median(a.nodes for a in results):,.0f}",
            f"{max(a.nodes for a in results):,}")])
    if python_n:
        say(f"### The Python core on the first {python_n} (same cap)")
        rows = []
        for i, d in enumerate(positions[:python_n]):
            a, secs = ours(5, 5, d, cap, core="python", caches=our_caches(5, 5))
            c = results[i]
            agree = ("yes" if (a.value, a.nodes) == (c.value, c.nodes)
                     else "value only" if a.value == c.value else "n/a" if not a.exact
                     or not c.exact else "**NO**")
            say(f"  #{i + 1:>2}  value {a.value:+d}  exact={a.exact}  {secs:7.3f}s  "
                f"nodes {a.nodes:>12,}  (compiled: {c.value:+d} exact={c.exact} "
                f"{times[i]:.3f}s nodes {c.nodes:,})")
            if agree == "**NO**":
                say(f"  !! THE CORES DISAGREE on 5x5 drawn {d:#x}")
            rows.append((f"#{i + 1}", f"{a.value:+d}" + ("" if a.exact else " (not exact)"),
                         f"{secs:.2f}", f"{a.nodes:,}", f"{c.value:+d}", f"{times[i]:.3f}",
                         f"{c.nodes:,}", f"{secs / times[i]:.0f}x", agree))
        say()
        table(("position", "python value", "python s", "python nodes", "c value", "c s",
               "c nodes", "python s / c s", "same value and nodes"), rows)


# -------------------------------------------------------------------------------- deadlines

def state_of(w, h, drawn):
    """A fresh state with ``drawn``'s lines played in order (so scores and turn follow)."""
    state = load_game("dots-and-boxes", width=w, height=h).new_state()
    for ln in bits(drawn):
        state.play_unchecked(ln)
    return state


def bench_deadlines(ms, reps, seed, slack_ms):
    say(f"## Deadlines: {ms} ms analyses (engine.analyse(state, time_ms={ms})), wall time "
        f"around the call, {reps} per position (empty, half the lines drawn, a quarter)")
    rows = []
    for w, h, core in ((5, 5, "c"), (5, 5, "python"), (10, 10, "python"), (20, 20, "python")):
        t = tables(w, h)
        rng = random.Random(seed)
        positions = [("empty", 0)]
        positions += [(f"half #{i + 1}", random_position(rng, w, h, t.nl // 2))
                      for i in range(3)]
        positions += [(f"early #{i + 1}", random_position(rng, w, h, t.nl * 3 // 4))
                      for i in range(2)]
        first = None
        el = []
        for name, d in positions:
            state = state_of(w, h, d)
            if first is None:
                t0 = time.perf_counter()
                engine_analyse(state, time_ms=ms, core=core)
                first = (time.perf_counter() - t0) * 1000
            pe = []
            for _ in range(reps):
                t0 = time.perf_counter()
                a = engine_analyse(state, time_ms=ms, core=core)
                pe.append((time.perf_counter() - t0) * 1000)
                assert a.core == core, (a.core, core)
            el += pe
            say(f"  {w}x{h} {core:<6} {name:<11} ({(t.full & ~d).bit_count():>3} undrawn): "
                f"max {max(pe):6.1f} ms  median {statistics.median(pe):6.1f} ms  "
                f"depth {a.depth}  nodes {a.nodes:,}")
        el.sort()
        p95 = el[min(len(el) - 1, int(round(0.95 * (len(el) - 1))))]
        ok = max(el) <= ms + slack_ms
        say(f"  {w}x{h} {core}: first call {first:.1f} ms (not counted), max {max(el):.1f} ms, "
            f"p95 {p95:.1f} ms: {'holds' if ok else '!! MISSED'}")
        rows.append((f"{w}x{h}", core, len(el), f"{statistics.median(el):.1f}", f"{p95:.1f}",
                     f"{max(el):.1f}", f"{first:.1f}",
                     "holds" if ok else f"**missed** (> {ms + slack_ms} ms)"))
    say()
    table(("board", "core", "analyses", "median ms", "p95 ms", "max ms", "first call ms",
           f"deadline ({ms} ms + {slack_ms} ms)"), rows)


# ------------------------------------------------------------------------------------ match

def bench_match(games, ms, slack_ms=10, w=5, h=5):
    say(f"## Match on {w}x{h}: compiled core vs Python core, {games} games at {ms} ms per move "
        f"(alternating who starts; a SearchCache per player per game)")
    game = load_game("dots-and-boxes", width=w, height=h)
    nl = tables(w, h).nl
    wins = draws = losses = 0
    margins = []
    seen = set()
    # every move's wall time per core, and the slowest with where it happened
    elapsed = {"c": [], "python": []}
    worst = {"c": (0.0, None), "python": (0.0, None)}
    t_start = time.perf_counter()
    for g in range(games):
        c_player = g % 2  # the compiled core moves first in even games
        caches = {"c": SearchCache(), "python": SearchCache()}
        state = game.new_state()
        while not state.is_terminal():
            core = "c" if state.to_move == c_player else "python"
            t0 = time.perf_counter()
            a = engine_analyse(state, time_ms=ms, core=core, cache=caches[core])
            ms_used = (time.perf_counter() - t0) * 1000
            elapsed[core].append(ms_used)
            if ms_used > worst[core][0]:
                worst[core] = (ms_used, (g + 1, len(state.history) + 1,
                                         (~state.drawn & ((1 << nl) - 1)).bit_count(),
                                         a.depth, a.nodes))
            state.play(a.best_move)
        s = state.scores
        margin = s[c_player] - s[1 - c_player]
        margins.append(margin)
        wins += margin > 0
        draws += margin == 0
        losses += margin < 0
        seen.add(tuple(state.history))
        if (g + 1) % 10 == 0 or g + 1 == games:
            say(f"  after {g + 1:>3} games: compiled W {wins} D {draws} L {losses}, "
                f"mean margin {statistics.mean(margins):+.2f} boxes, "
                f"{len(seen)} distinct games, {time.perf_counter() - t_start:.0f}s")
    first = [m for i, m in enumerate(margins) if i % 2 == 0]
    second = [m for i, m in enumerate(margins) if i % 2 == 1]
    say()
    table(("games", "compiled W", "D", "L", "mean margin (c - python)",
           "margin, c first", "margin, c second", "distinct games"),
          [(games, wins, draws, losses, f"{statistics.mean(margins):+.2f}",
            f"{statistics.mean(first):+.2f}" if first else "",
            f"{statistics.mean(second):+.2f}" if second else "", len(seen))])
    rows = []
    for core in ("c", "python"):
        el = sorted(elapsed[core])
        if not el:
            continue
        ms_w, where = worst[core]
        rows.append((core, len(el), f"{statistics.median(el):.1f}",
                     f"{el[int(0.99 * (len(el) - 1))]:.1f}", f"{ms_w:.1f}",
                     sum(1 for x in el if x > ms + slack_ms),
                     "game {}, move {} ({} undrawn; depth {}, {:,} nodes)".format(*where)))
    table(("core", "moves", "median ms", "p99 ms", "max ms", f"over {ms} + {slack_ms} ms",
           "slowest move"), rows)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--skip", default="",
                   help="comma list of sections to skip: " + ",".join(SECTIONS))
    p.add_argument("--boards", default="3x3,2x5,3x4",
                   help="empty boards of the 'empty' section")
    p.add_argument("--cap", type=float, default=600.0,
                   help="seconds per solve ('empty', '3x4', '4x4')")
    p.add_argument("--plain-cap", type=float, default=60.0,
                   help="seconds per solve of the plain baseline (it takes 27 s on 3x3)")
    p.add_argument("--table-gb", type=float, default=8.0,
                   help="GiB of the compiled table of the 4x4 solve")
    p.add_argument("--table-mb", type=int, default=256,
                   help="MiB of the compiled tables of the other solves")
    p.add_argument("--positions", type=int, default=20)
    p.add_argument("--undrawn", type=int, default=40)
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--python-positions", type=int, default=0,
                   help="of the positions, solve this many with the Python core too")
    p.add_argument("--core-positions", type=int, default=4,
                   help="5x5 positions (40 undrawn) of the 'cores' section")
    p.add_argument("--core-nodes", type=int, default=300_000,
                   help="node limit of the 'cores' section's 5x5 searches")
    p.add_argument("--core-reps", type=int, default=3,
                   help="runs of each search by the compiled core in 'cores' (the fastest "
                        "counts)")
    p.add_argument("--deadline-ms", type=int, default=200)
    p.add_argument("--deadline-reps", type=int, default=5)
    p.add_argument("--deadline-slack", type=int, default=10,
                   help="ms over the deadline still counted as holding it ('deadlines', "
                        "'match')")
    p.add_argument("--match-games", type=int, default=100)
    p.add_argument("--match-ms", type=int, default=200)
    p.add_argument("--repeat", type=int, default=1,
                   help="solves of each empty board by ours; the table shows the fastest")
    p.add_argument("--tt", type=int, default=None,
                   help="'empty' section: our solves on the Python core with a table of this "
                        "many entries (default: the compiled core)")
    args = p.parse_args(argv)
    global TT_ENTRIES, REPEAT, TABLE_MB
    TT_ENTRIES = args.tt
    TABLE_MB = args.table_mb
    REPEAT = max(1, args.repeat)
    skip = set(filter(None, args.skip.split(",")))
    unknown = skip - set(SECTIONS)
    if unknown:
        p.error(f"unknown section(s) {', '.join(sorted(unknown))}; "
                f"sections: {', '.join(SECTIONS)}")
    boards = [tuple(int(v) for v in b.split("x")) for b in args.boards.split(",") if b]
    t0 = time.perf_counter()
    if "openspiel" not in skip:
        bench_openspiel()
    if "cores" not in skip:
        bench_cores(args.seed, args.core_positions, args.core_nodes, args.cap, args.core_reps)
    if "empty" not in skip:
        bench_empty(boards, args.cap, args.plain_cap)
    if "3x4" not in skip:
        bench_solve(3, 4, args.cap, args.table_mb * MiB, expect=0)
    if "4x4" not in skip:
        bench_solve(4, 4, args.cap, int(args.table_gb * GiB), expect=0)
    if "positions" not in skip:
        bench_positions(args.positions, args.undrawn, min(args.cap, 60.0), args.seed,
                        args.python_positions, args.table_mb)
    if "deadlines" not in skip:
        bench_deadlines(args.deadline_ms, args.deadline_reps, args.seed, args.deadline_slack)
    if "match" not in skip:
        bench_match(args.match_games, args.match_ms, args.deadline_slack)
    say(f"(all done in {time.perf_counter() - t0:.0f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
