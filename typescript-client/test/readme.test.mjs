// The README's bot, exactly as written there, plays a whole game against the engine seat.
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";

import { BoxfishClient } from "@boxfish/client";
import { URL_ } from "./helpers.mjs";

const PACKAGE = fileURLToPath(new URL("..", import.meta.url));

function readmeBlock(marker, path = join(PACKAGE, "README.md")) {
  const readme = readFileSync(path, "utf8");
  const blocks = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]);
  const found = blocks.filter((b) => b.includes(marker));
  assert.equal(found.length, 1, `one js block of the README has ${marker}`);
  return found[0];
}

test("the README bot plays a whole game against the engine seat", async () => {
  const code = readmeBlock("export async function playAgainstEngine(");
  assert.ok(code.trim().split("\n").length <= 22, "the bot stays about 20 lines");
  // The docs page's copy of the bot is this one.
  const page = join(PACKAGE, "..", "docs", "typescript-client.md");
  assert.equal(readmeBlock("export async function playAgainstEngine(", page), code);
  // Inside the package, so that its `import ... from "@boxfish/client"` resolves to this
  // package by name (its "exports"), as in a bot's project.
  const dir = join(PACKAGE, ".test-tmp");
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `readme-bot-${process.pid}.mjs`);
  writeFileSync(file, code);
  try {
    const { playAgainstEngine } = await import(pathToFileURL(file).href);
    const final = await playAgainstEngine(URL_, { width: 3, height: 3, timeMs: 50 });
    assert.equal(final.status, "finished");
    assert.equal(final.finished, true);
    assert.equal(final.serial, 24); // every line of a 3x3 board
    assert.match(final.lines, /^1{24}$/);
    assert.equal(final.scores[0] + final.scores[1], 9);
    assert.equal(final.engine.seat, 1);
    const moves = await new BoxfishClient(URL_).moves(final.id);
    assert.deepEqual(moves.map((m) => m.serial), Array.from({ length: 24 }, (_, i) => i + 1));
    assert.ok(moves.some((m) => m.player === 0) && moves.some((m) => m.player === 1));
  } finally {
    rmSync(file, { force: true });
  }
});
