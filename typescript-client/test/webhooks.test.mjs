// Webhook verification (Standard Webhooks, with the standardwebhooks package) of a real
// delivery: boxfish serve's webhook worker POSTs a move.appended to a receiver here.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { test } from "node:test";

import { BoxfishClient, verifyWebhook, WebhookVerificationError } from "@boxfish/client";
import { URL_, waitFor } from "./helpers.mjs";

const api = new BoxfishClient(URL_);

/** A receiver on loopback that keeps each delivery's raw body and headers, answering 204. */
async function receiver() {
  const deliveries = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      deliveries.push({ headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(204).end();
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${server.address().port}/hook`, deliveries,
           close: () => new Promise((resolve) => server.close(resolve)) };
}

test("a real delivery verifies; a forged one is rejected", async () => {
  const hooks = await receiver();
  try {
    const game = await api.createGame({ game: "dots-and-boxes", width: 2, height: 2 });
    const hook = await api.addWebhook(game.id, hooks.url, { events: ["move.appended"],
                                                           token: game.write_token });
    assert.match(hook.secret, /^whsec_/);
    assert.deepEqual(hook.events, ["move.appended"]);
    assert.deepEqual((await api.listWebhooks(game.id, game.write_token)).map((h) => h.id), [hook.id]);
    const played = await api.play(game.id, game.legal_moves[0], { serial: 1, token: game.write_token });

    const { headers, body } = await waitFor(() => hooks.deliveries[0], "the delivery");
    const event = verifyWebhook(hook.secret, headers, body);
    assert.equal(event.type, "move.appended");
    assert.equal(event.data.game, game.id);
    assert.equal(event.data.serial, 1);
    assert.deepEqual(event.data.move, played.move);
    // a fetch Headers and a string body do as well
    assert.equal(verifyWebhook(hook.secret, new Headers(headers), body.toString()).data.serial, 1);

    const forged = Buffer.from(body.toString().replace('"serial":1', '"serial":2'));
    assert.notDeepEqual(forged, body);
    assert.throws(() => verifyWebhook(hook.secret, headers, forged), WebhookVerificationError);
    const otherSecret = "whsec_" + Buffer.from("another secret, not the hook's").toString("base64");
    assert.throws(() => verifyWebhook(otherSecret, headers, body), WebhookVerificationError);
    const old = { ...headers, "webhook-timestamp": String(Math.floor(Date.now() / 1000) - 3600) };
    assert.throws(() => verifyWebhook(hook.secret, old, body), WebhookVerificationError);
    const { "webhook-signature": _, ...unsigned } = headers;
    assert.throws(() => verifyWebhook(hook.secret, unsigned, body), WebhookVerificationError);
    assert.throws(() => verifyWebhook("", headers, body), WebhookVerificationError);

    await api.deleteWebhook(game.id, hook.id, game.write_token);
    assert.deepEqual(await api.listWebhooks(game.id, game.write_token), []);
  } finally {
    await hooks.close();
  }
});
