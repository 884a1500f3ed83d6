"""Benchmark of the TypeScript client (``typescript-client/``, ``@boxfish/client``): its size as
installed, and what it costs a bot against the same HTTP calls made with bare ``fetch``, over
real HTTP.

Builds the package (``npm ci`` when its node_modules is missing, ``npm run build``), then:

* size: ``npm pack`` of the package (the tarball's size and its unpacked size: ``dist/``, the
  README and package.json) and the runtime dependencies it installs (``eventsource-parser``,
  ``standardwebhooks`` and theirs, as ``npm ls --omit=dev`` lists them: their files on disk);
* bot: starts ``boxfish serve`` itself (embedded Redis, ``--workers`` analysis workers) and
  plays ``--games`` games of ``--size`` x ``--size`` against the engine seat (seat 1,
  ``--time-ms`` per move) with the README's bot (``playAgainstEngine``: the client's
  ``createGame``, ``events``, ``analyse`` and ``play``), alternating, game by game, with a bot
  written on bare ``fetch`` that makes the same HTTP calls (``POST /v1/games``, one event
  stream read by hand, ``POST /v1/games/{id}/analyses?wait=``, ``POST .../moves`` with
  serial, Idempotency-Key and token). Each game searches for its own time (``--time-ms`` + 0,
  1, 2, ...: no game joins another's jobs) and the store of exact values is off (no game is
  answered from another's proofs); one game of each bot is played first, not counted (the
  first searches of a fresh server are slower). Reported: moves per second (every move of
  the game, the engine's too, over the games' wall time) and the bot's own moves per second,
  and their ratio;
* appends: ``--appends`` moves with ``play`` and as many bare ``fetch`` POSTs, alternating,
  on two 20x20 games: p50 of each and their ratio (the client's own cost per call, with no
  search in it).

    python bench/typescript_client_bench.py [--games 10] [--size 3] [--time-ms 20] [--appends 300]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from service_bench import launch_serve, stop_serve

from boxfish.service.runtime.embedded_redis import free_port

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "typescript-client"

# The bench's Node side: run from a file inside the package, so "@boxfish/client" resolves
# to it by name, as in a bot's project.
NODE_BENCH = r"""
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { BoxfishClient } from "@boxfish/client";

const [url, games, size, timeMs, appends, readmePath] = process.argv.slice(2);
const readme = readFileSync(readmePath, "utf8");
const code = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1])
  .find((b) => b.includes("export async function playAgainstEngine("));
const { playAgainstEngine } = await import("data:text/javascript," + encodeURIComponent(
  code.replace('from "@boxfish/client"', `from "${import.meta.resolve("@boxfish/client")}"`)));

/** The README bot's HTTP calls, with bare fetch and a hand-read event stream. */
async function bareBot(url, { width, height, timeMs }) {
  const json = { "Content-Type": "application/json" };
  let r = await fetch(`${url}/v1/games`, { method: "POST", headers: json, body: JSON.stringify(
    { game: "dots-and-boxes", width, height, engine: { seat: 1, time_ms: timeMs } }) });
  const game = await r.json();
  const auth = { ...json, Authorization: `Bearer ${game.write_token}` };
  const position = r.headers.get("ETag").replaceAll('"', "");
  const stream = await fetch(`${url}/v1/games/${game.id}/events`,
                             { headers: { "Last-Event-ID": position } });
  const reader = stream.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  async function nextMove() {
    for (;;) {
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (/^event: move$/m.test(block)) return JSON.parse(/^data: (.*)$/m.exec(block)[1]);
      }
      const { value, done } = await reader.read();
      if (done) throw new Error("the stream ended");
      buffer += value;
    }
  }
  let last = { serial: game.serial, to_move: game.to_move, status: game.status };
  while (last.status !== "finished") {
    if (last.to_move === 0) {
      r = await fetch(`${url}/v1/games/${game.id}/analyses?wait=5`, { method: "POST",
        headers: json, body: JSON.stringify({ at: last.serial, time_ms: timeMs }) });
      let job = await r.json();
      while (job.status !== "finished") {
        await new Promise((resolve) => setTimeout(resolve, 50));
        job = await (await fetch(`${url}/v1/analyses/${job.id}`)).json();
      }
      r = await fetch(`${url}/v1/games/${game.id}/moves`, { method: "POST",
        headers: { ...auth, "Idempotency-Key": randomUUID() },
        body: JSON.stringify({ move: job.result.best_move, serial: last.serial + 1 }) });
      if (r.status !== 201) throw new Error(`append answered ${r.status}`);
      await r.arrayBuffer();
    }
    last = await nextMove();
  }
  await reader.cancel();
  return await (await fetch(`${url}/v1/games/${game.id}`)).json(); // as the README bot does
}

async function countMoves(id) {
  const moves = (await (await fetch(`${url}/v1/games/${id}/moves`)).json()).moves;
  return { all: moves.length, ours: moves.filter((m) => m.player === 0).length };
}

const out = { client: { ms: 0, all: 0, ours: 0 }, bare: { ms: 0, all: 0, ours: 0 } };
// Every game its own search time (timeMs + k), so that no game joins the analyses or engine
// jobs of another (the server shares identical requests); the bots take turns going first.
// First one game of each, not counted: the server's first searches are slower (cold
// workers), and whichever bot played first would pay for it.
let k = 0;
for (const bot of [playAgainstEngine, bareBot]) {
  await bot(url, { width: Number(size), height: Number(size), timeMs: Number(timeMs) + k++ });
}
for (let g = 0; g < Number(games); g++) {
  for (const [name, bot] of g % 2 ? [["bare", bareBot], ["client", playAgainstEngine]]
                                   : [["client", playAgainstEngine], ["bare", bareBot]]) {
    const options = { width: Number(size), height: Number(size), timeMs: Number(timeMs) + k++ };
    const t = performance.now();
    const final = await bot(url, options);
    out[name].ms += performance.now() - t;
    const n = await countMoves(final.id);
    out[name].all += n.all;
    out[name].ours += n.ours;
  }
}

const api = new BoxfishClient(url);
const lines = [];
for (let x = 1; x <= 21; x++) for (let y = 1; y <= 21; y++) {
  if (x <= 20) lines.push([x, y, 1]);
  if (y <= 20) lines.push([x, y, 2]);
}
const g1 = await api.createGame({ game: "dots-and-boxes", width: 20, height: 20 });
const g2 = await api.createGame({ game: "dots-and-boxes", width: 20, height: 20 });
const typed = [], bare = [];
for (let i = 0; i < Math.min(Number(appends), lines.length); i++) {
  let t = performance.now();
  await api.play(g1.id, lines[i], { serial: i + 1, token: g1.write_token });
  typed.push(performance.now() - t);
  t = performance.now();
  const r = await fetch(`${url}/v1/games/${g2.id}/moves`, { method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${g2.write_token}`,
               "Idempotency-Key": randomUUID() },
    body: JSON.stringify({ move: lines[i], serial: i + 1 }) });
  if (r.status !== 201) throw new Error(`bare append answered ${r.status}`);
  await r.arrayBuffer();
  bare.push(performance.now() - t);
}
out.appends = { typed, bare };
console.log(JSON.stringify(out));
"""


def npm(*args: str) -> str:
    return subprocess.run(["npm", *args], cwd=PACKAGE, check=True, capture_output=True,
                          text=True).stdout


def tree_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def kb(n: float) -> str:
    return f"{n / 1024:.1f} kB"


def p50(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def sizes() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        [packed] = json.loads(npm("pack", "--json", "--pack-destination", tmp))
    deps = [Path(line) for line in npm("ls", "--omit=dev", "--all", "--parseable").split()
            if Path(line).resolve() != PACKAGE.resolve()]
    dep_bytes = sum(tree_bytes(d) for d in deps)
    names = ", ".join(sorted(str(d.relative_to(PACKAGE / "node_modules")) for d in deps))
    print("| @boxfish/client, as installed | size |")
    print("|---|---|")
    print(f"| npm pack tarball ({packed['entryCount']} files) | {kb(packed['size'])} |")
    print(f"| the package unpacked (dist/, README, package.json) | "
          f"{kb(packed['unpackedSize'])} |")
    print(f"| its runtime dependencies on disk ({len(deps)}: {names}) | {kb(dep_bytes)} |")
    print(f"| installed in all (package + runtime dependencies) | "
          f"{kb(packed['unpackedSize'] + dep_bytes)} |")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--games", type=int, default=10, help="games of each bot")
    p.add_argument("--size", type=int, default=3)
    p.add_argument("--time-ms", type=int, default=20)
    p.add_argument("--appends", type=int, default=300)
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args()
    if not (PACKAGE / "node_modules" / ".package-lock.json").exists():
        npm("ci", "--no-audit", "--no-fund", "--ignore-scripts")
    npm("run", "build", "--silent")
    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    print(f"node {node}, load average at start: {os.getloadavg()[0]:.2f}\n")
    sizes()

    port = free_port()
    # The store of exact values off: a position proven in one game would be answered from it,
    # with no search, in the next.
    proc = launch_serve(port, args.workers, 16, 2, env_extra={"BOXFISH_EXACT_STORE_MB": "0"})
    base = f"http://127.0.0.1:{port}"
    tmp_dir = PACKAGE / ".test-tmp"
    tmp_dir.mkdir(exist_ok=True)
    script = tmp_dir / f"bench-{os.getpid()}.mjs"
    script.write_text(NODE_BENCH)
    try:
        run = subprocess.run(["node", str(script), base, str(args.games), str(args.size),
                              str(args.time_ms), str(args.appends), str(PACKAGE / "README.md")],
                             cwd=PACKAGE, capture_output=True, text=True, timeout=3600)
    finally:
        script.unlink(missing_ok=True)
        stop_serve(proc)
    if run.returncode != 0:
        raise SystemExit(f"the node bench failed:\n{run.stderr}")
    out = json.loads(run.stdout.strip().splitlines()[-1])

    print(f"\n| bot vs the engine seat ({args.games} games of {args.size}x{args.size} each, "
          f"{args.time_ms + 2} to {args.time_ms + 2 * args.games + 1} ms a search, no store "
          f"of exact values) | moves/s (all) | bot's moves/s | s per game |")
    print("|---|---|---|---|")
    rate = {}
    for name, label in (("bare", "bare fetch, the same HTTP calls"),
                        ("client", "@boxfish/client, the README bot")):
        r = out[name]
        rate[name] = r["all"] / (r["ms"] / 1000)
        print(f"| {label} | {rate[name]:.1f} | {r['ours'] / (r['ms'] / 1000):.1f} | "
              f"{r['ms'] / 1000 / args.games:.2f} |")
    print(f"\nclient / bare, moves per second: {rate['client'] / rate['bare']:.2f}x")

    typed, bare = out["appends"]["typed"], out["appends"]["bare"]
    print(f"\n| appends, alternating ({len(typed)} each) | p50 ms |")
    print("|---|---|")
    print(f"| bare fetch POST | {p50(bare):.2f} |")
    print(f"| @boxfish/client `play` (Idempotency-Key, typed result, retries) | "
          f"{p50(typed):.2f} |")
    print(f"\nclient / bare, p50 append: {p50(typed) / p50(bare):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
