// The event stream against a live boxfish serve: resumed after a dropped connection with
// Last-Event-ID (the position of the last move handed out), and the `game` reset event
// (the log cut back under the stream, as a store failover that lost moves leaves it)
// handed out as a GameReset, on the open stream and on a stream started from a lost position.
import assert from "node:assert/strict";
import { test } from "node:test";

import { BoxfishClient } from "@boxfish/client";
import { follow, loseMoves, startProxy, URL_, waitFor } from "./helpers.mjs";

const api = new BoxfishClient(URL_);

async function newGame() {
  const game = await api.createGame({ game: "dots-and-boxes", width: 2, height: 2 });
  return { game, lines: game.legal_moves };
}

/** Play the lines not drawn yet, in order, each at the log's next serial. */
async function playToTheEnd(game, lines) {
  let state = await api.getGame(game.id);
  for (const line of lines) {
    if (!state.finished && state.legal_moves.some((m) => m.join() === line.join())) {
      await api.play(game.id, line, { serial: state.serial + 1, token: game.write_token });
      state = await api.getGame(game.id);
    }
  }
  assert.ok(state.finished);
}

test("a dropped stream resumes with Last-Event-ID: every move once, in order", async () => {
  const { game, lines } = await newGame();
  for (const [i, line] of lines.slice(0, 2).entries()) {
    await api.play(game.id, line, { serial: i + 1, token: game.write_token });
  }
  const proxy = await startProxy(URL_);
  try {
    const reader = new BoxfishClient(proxy.url, { backoffMs: 50, retries: 10 });
    const follower = follow(reader, game.id, { after: 0, idleTimeoutMs: 10_000 });
    await waitFor(() => follower.seen.length === 2, "moves 1 and 2");
    const second = follower.seen[1];
    assert.match(second.position, /^2\.[0-9a-f]{16}$/);

    proxy.dropAll(); // the connection goes; the client reopens after the last position
    await api.play(game.id, lines[2], { serial: 3, token: game.write_token });
    await waitFor(() => follower.seen.length === 3, "move 3 after the drop");
    assert.deepEqual(proxy.lastEventIds.slice(0, 2), ["0", second.position]);

    await playToTheEnd(game, lines);
    await follower.done; // it ends after the move that finishes the game
    const log = await api.moves(game.id);
    assert.deepEqual(follower.seen.map((m) => [m.kind, m.serial, m.move]),
                     log.map((m) => ["move", m.serial, m.move]));
    assert.ok(follower.seen.at(-1).finished);
    assert.ok(proxy.lastEventIds.length >= 2);
  } finally {
    await proxy.close();
  }
});

test("an open stream whose log is cut back hands out a GameReset, then the new moves", async () => {
  const { game, lines } = await newGame();
  for (const [i, line] of lines.slice(0, 3).entries()) {
    await api.play(game.id, line, { serial: i + 1, token: game.write_token });
  }
  const proxy = await startProxy(URL_); // to count the stream's requests
  const follower = follow(new BoxfishClient(proxy.url), game.id,
                          { after: 0, idleTimeoutMs: 30_000 });
  await waitFor(() => follower.seen.length === 3, "moves 1 to 3");
  const head = await loseMoves(game.id, 2);
  await waitFor(() => follower.seen.some((e) => e.kind === "reset"), "a GameReset");
  assert.deepEqual(proxy.lastEventIds, ["0"]); // on the open stream, not on reopening
  const reset = follower.seen[3];
  assert.equal(reset.kind, "reset");
  assert.deepEqual([reset.serial, reset.position, reset.to_move, reset.finished],
                   [2, `2.${head}`, 0, false]);
  const now = await api.getGame(game.id);
  assert.equal(reset.game.serial, now.serial);
  assert.equal(reset.game.lines, now.lines);
  assert.equal(reset.game.position, now.position);

  await api.play(game.id, lines[7], { serial: 3, token: game.write_token });
  await waitFor(() => follower.seen.length === 5, "the move that took serial 3");
  assert.deepEqual([follower.seen[4].kind, follower.seen[4].serial, follower.seen[4].move],
                   ["move", 3, lines[7]]);
  await playToTheEnd(game, lines);
  await follower.done;
  const log = await api.moves(game.id);
  assert.deepEqual(follower.seen.slice(4).map((m) => [m.serial, m.move]),
                   log.slice(2).map((m) => [m.serial, m.move]));
  await proxy.close();
});

test("a stream started from a position the log lost starts with a GameReset", async () => {
  const { game, lines } = await newGame();
  for (const [i, line] of lines.slice(0, 3).entries()) {
    await api.play(game.id, line, { serial: i + 1, token: game.write_token });
  }
  const atThree = await api.getGame(game.id);
  await loseMoves(game.id, 2);
  await api.play(game.id, lines[8], { serial: 3, token: game.write_token });
  const now = await api.getGame(game.id);
  assert.notEqual(now.position, atThree.position);

  const stale = api.events(game.id, { after: atThree.position });
  const first = (await stale.next()).value;
  await stale.return();
  assert.equal(first.kind, "reset");
  assert.equal(first.position, now.position);
  assert.equal(first.game.lines, now.lines);

  const trusted = api.events(game.id, { after: 2 }); // a bare serial is trusted
  const move = (await trusted.next()).value;
  await trusted.return();
  assert.deepEqual([move.kind, move.serial, move.move], ["move", 3, lines[8]]);
  assert.throws(() => api.events(game.id, { after: "three" }), TypeError);
});
