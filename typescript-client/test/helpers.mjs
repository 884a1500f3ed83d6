// Shared by the tests: the server under test (BOXFISH_URL, started by
// tests/typescript_client/test_typescript_client.py), its test-only control endpoint
// (BOXFISH_CONTROL_URL: cuts a game's log back as a store failover would), and waiting on a
// condition with a deadline.
import net from "node:net";

export const URL_ = process.env.BOXFISH_URL;
export const CONTROL_URL = process.env.BOXFISH_CONTROL_URL;
if (!URL_) throw new Error("BOXFISH_URL is not set: these tests run against a live boxfish serve");

export const WAIT_MS = 60_000;

/** Resolves once `condition()` is truthy; rejects with `what` after `timeoutMs`. */
export async function waitFor(condition, what, timeoutMs = WAIT_MS) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Every line of a width x height Dots-and-Boxes board, in action-id order (as legal_moves). */
export function allLines(game) {
  return game.legal_moves.map((m) => [...m]);
}

/** The store loses the game's moves after `keep` (test-only control endpoint); the head at
 * `keep`. */
export async function loseMoves(gameId, keep) {
  if (!CONTROL_URL) throw new Error("BOXFISH_CONTROL_URL is not set");
  const resp = await fetch(`${CONTROL_URL}/lose-moves`, {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ game: gameId, keep }),
  });
  if (resp.status !== 200) throw new Error(`lose-moves answered ${resp.status}: ${await resp.text()}`);
  return (await resp.json()).head;
}

/** A TCP proxy on loopback to `target` (http://host:port) that notes each request head's
 * Last-Event-ID, can drop every connection it carries (`dropAll`) or the next answer
 * (`dropNextAnswer`). */
export async function startProxy(target) {
  const { hostname, port } = new URL(target);
  const sockets = new Set();
  const lastEventIds = [];
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(port), hostname);
    sockets.add(client);
    sockets.add(upstream);
    let head = "";
    client.on("data", (chunk) => {
      head += chunk.toString("latin1");
      let end;
      while ((end = head.indexOf("\r\n\r\n")) >= 0) {
        const match = /^last-event-id:\s*(.*)$/im.exec(head.slice(0, end));
        if (/^GET [^ ]*\/events/.test(head)) lastEventIds.push(match ? match[1].trim() : null);
        head = head.slice(end + 4);
      }
      upstream.write(chunk);
    });
    upstream.on("data", (chunk) => {
      if (proxy.dropNextAnswer) { // the answer is lost: the request was served
        proxy.dropNextAnswer = false;
        client.destroy();
        upstream.destroy();
        return;
      }
      client.write(chunk);
    });
    const close = () => { client.destroy(); upstream.destroy(); sockets.delete(client); sockets.delete(upstream); };
    client.on("close", close).on("error", close);
    upstream.on("close", close).on("error", close);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const proxy = {
    url: `http://127.0.0.1:${server.address().port}`,
    lastEventIds,
    /** Set: the next answer from the server is dropped (the connection closed instead). */
    dropNextAnswer: false,
    dropAll() { for (const s of sockets) s.destroy(); sockets.clear(); },
    close() { this.dropAll(); return new Promise((resolve) => server.close(resolve)); },
  };
  return proxy;
}

/** Collects `api.events(...)` into `seen` in the background; `done` settles when it ends. */
export function follow(api, gameId, options = {}) {
  const seen = [];
  const controller = new AbortController();
  const done = (async () => {
    for await (const item of api.events(gameId, { ...options, signal: controller.signal })) {
      seen.push(item);
    }
  })();
  done.catch(() => {});
  return { seen, done, stop: () => controller.abort() };
}
