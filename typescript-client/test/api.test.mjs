// The typed calls against a live boxfish serve: games, moves with serials and idempotency
// keys, typed errors from problem+json, analyses with wait, reviews, the store of exact
// values, records.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";

import {
  BoxfishClient, BoxfishError, ConnectionFailed, Forbidden, IllegalMove, InvalidRecord,
  InvalidRequest, NothingToReview, NotFound, SerialConflict, Unauthorized,
} from "@boxfish/client";
import { startProxy, URL_ } from "./helpers.mjs";

const api = new BoxfishClient(URL_);

test("a game is created, read and listed", async () => {
  const game = await api.createGame({ game: "dots-and-boxes", width: 2, height: 2 });
  assert.match(game.id, /^[\w-]+$/);
  assert.equal(typeof game.write_token, "string");
  assert.equal(game.serial, 0);
  assert.equal(game.position, "0");
  assert.equal(game.finished, false);
  assert.equal(game.legal_moves.length, 12);
  const again = await api.getGame(game.id);
  assert.equal(again.id, game.id);
  assert.equal(again.lines, "000000000000");
  assert.equal("write_token" in again, false);
  const listed = await api.listGames(100);
  assert.ok(listed.some((g) => g.id === game.id && g.width === 2 && g.serial === 0));
});

test("moves are appended with serials; a stale serial is a SerialConflict", async () => {
  const game = await api.createGame({ game: "dots-and-boxes", width: 2, height: 2 });
  const [a, b, c] = game.legal_moves;
  const first = await api.play(game.id, a, { serial: 1, token: game.write_token });
  assert.deepEqual([first.serial, first.player, first.to_move, first.replayed], [1, 0, 1, false]);
  assert.match(first.position, /^1\.[0-9a-f]{16}$/);
  const second = await api.play(game.id, b, { serial: 2, token: game.write_token });
  assert.equal(second.serial, 2);
  const stale = await api.play(game.id, c, { serial: 2, token: game.write_token })
    .then(() => null, (e) => e);
  assert.ok(stale instanceof SerialConflict, String(stale));
  assert.ok(stale instanceof BoxfishError);
  assert.equal(stale.status, 409);
  assert.equal(stale.type, "urn:boxfish:problem:serial-conflict");
  assert.equal(stale.slug, "serial-conflict");
  assert.equal(stale.currentSerial, 2);
  assert.ok(stale.title && stale.detail);
  const moves = await api.moves(game.id);
  assert.deepEqual(moves.map((m) => [m.serial, m.move]), [[1, a], [2, b]]);
  assert.deepEqual((await api.moves(game.id, 1)).map((m) => m.serial), [2]);
  assert.equal((await api.getGame(game.id)).position, second.position);
});

test("a retry with the same Idempotency-Key returns the same move, stored once", async () => {
  const game = await api.createGame({ game: "dots-and-boxes", width: 2, height: 2 });
  const key = randomUUID();
  const [a, b] = game.legal_moves;
  const once = await api.play(game.id, a, { serial: 1, token: game.write_token, idempotencyKey: key });
  const twice = await api.play(game.id, a, { serial: 1, token: game.write_token, idempotencyKey: key });
  assert.equal(once.replayed, false);
  assert.equal(twice.replayed, true);
  const { replayed: _r1, ...first } = once;
  const { replayed: _r2, ...second } = twice;
  assert.deepEqual(second, first);
  assert.equal((await api.moves(game.id)).length, 1);
  const reused = await api.play(game.id, b, { serial: 1, token: game.write_token, idempotencyKey: key })
    .then(() => null, (e) => e);
  assert.ok(reused instanceof InvalidRequest);
  assert.equal(reused.reason, "idempotency_key_reused");
});

test("a move whose answer was lost is retried with its key and stored once", async () => {
  const game = await api.createGame({ game: "dots-and-boxes", width: 2, height: 2 });
  const proxy = await startProxy(URL_);
  try {
    const flaky = new BoxfishClient(proxy.url, { token: game.write_token, backoffMs: 20 });
    await flaky.getGame(game.id); // an answer has come: a lost one is retried
    proxy.dropNextAnswer = true;
    const played = await flaky.play(game.id, game.legal_moves[0], { serial: 1 });
    assert.equal(proxy.dropNextAnswer, false, "the first answer was dropped");
    assert.equal(played.replayed, true); // the retry got the stored move back
    assert.equal(played.serial, 1);
    assert.deepEqual((await api.moves(game.id)).map((m) => m.serial), [1]);
  } finally {
    await proxy.close();
  }
});

test("errors are typed from problem+json", async () => {
  const game = await api.createGame({ game: "dots-and-boxes", width: 2, height: 2 });
  const other = await api.createGame({ game: "dots-and-boxes", width: 2, height: 2 });
  const move = game.legal_moves[0];
  await assert.rejects(api.play(game.id, move), Unauthorized);
  await assert.rejects(api.play(game.id, move, { token: other.write_token }), Forbidden);
  await assert.rejects(api.getGame("no-such-game"), (e) => e instanceof NotFound && e.status === 404);
  await api.play(game.id, move, { token: game.write_token });
  await assert.rejects(api.play(game.id, move, { token: game.write_token }),
                       (e) => e instanceof IllegalMove && e.reason === "already_drawn");
  await assert.rejects(api.review(other.id), NothingToReview);
  await assert.rejects(api.importRecord("[Game \"nonsense\"]\n\n*\n"),
                       (e) => e instanceof InvalidRecord && e.status === 422 && typeof e.reason === "string");
  const nowhere = new BoxfishClient("http://127.0.0.1:9", { backoffMs: 10 });
  await assert.rejects(nowhere.getGame("x"), (e) => e instanceof ConnectionFailed && e.status === null);
});

test("an analysis with wait returns a value", async () => {
  const position = { game: "dots-and-boxes", width: 2, height: 2, moves: [[1, 1, 1]] };
  // a search stops once the value is proven: the time is only a ceiling, for a loaded machine
  const analysis = await api.analyse({ position, timeMs: 2000, waitS: 5, timeoutMs: 120_000 });
  assert.equal(analysis.status, "finished");
  assert.equal(typeof analysis.result.value, "number");
  assert.equal(analysis.result.exact, true);
  assert.equal(analysis.result.best_move.length, 3);
  const game = await api.createGame({ game: "dots-and-boxes", width: 2, height: 2 });
  await api.play(game.id, [1, 1, 1], { serial: 1, token: game.write_token });
  const atOne = await api.analyse({ gameId: game.id, at: 1, timeMs: 2000, timeoutMs: 120_000 });
  assert.equal(atOne.result.value, analysis.result.value);
  assert.equal((await api.getAnalysis(atOne.id)).status, "finished");
  // A proven value is in the store of exact values, mirrored positions included.
  const stored = await api.storedPosition({ width: 2, height: 2, moves: [[1, 1, 1]] });
  assert.ok(stored, "the proven position is stored");
  assert.equal(stored.exact, true);
  assert.equal(stored.value, analysis.result.value);
  assert.equal(await api.storedPosition({ width: 9, height: 9, moves: [[1, 1, 1]] }), null);
});

test("a review of a whole game", async () => {
  const game = await api.createGame({ game: "dots-and-boxes", width: 2, height: 2 });
  let serial = 0;
  for (const move of game.legal_moves) {
    await api.play(game.id, move, { serial: ++serial, token: game.write_token });
  }
  const review = await api.review(game.id, { timeMs: 50, waitS: 5, timeoutMs: 180_000 });
  assert.equal(review.status, "finished");
  assert.equal(review.game_id, game.id);
  assert.equal(review.moves.length, 12);
  assert.equal(review.players.length, 2);
  assert.equal(review.position, (await api.getGame(game.id)).position);
  assert.equal((await api.getReview(review.id)).status, "finished");
});

test("records are exported and imported once per Idempotency-Key", async () => {
  const game = await api.createGame({ game: "dots-and-boxes", width: 2, height: 2 });
  const [a, b, c] = game.legal_moves;
  for (const [i, m] of [a, b, c].entries()) await api.play(game.id, m, { serial: i + 1, token: game.write_token });
  const record = await api.exportRecord(game.id);
  assert.match(record, /\[Game "dots-and-boxes"\]/);
  assert.match(record, /\[Size "2x2"\]/);
  const key = randomUUID();
  const copy = await api.importRecord(record, { idempotencyKey: key });
  const again = await api.importRecord(record, { idempotencyKey: key });
  assert.notEqual(copy.id, game.id);
  assert.equal(again.id, copy.id);
  assert.equal(copy.serial, 3);
  assert.deepEqual((await api.moves(copy.id)).map((m) => m.move), [a, b, c]);
  assert.equal((await api.exportRecord(game.id, 1)).includes("1. 1,1,1"), true);
});
