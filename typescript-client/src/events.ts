/**
 * A game's event stream (`GET /v1/games/{id}/events`, Server-Sent Events, parsed with
 * `eventsource-parser` over `fetch`), as the Python client follows it.
 *
 * Every event id is a log position, `<serial>.<head>` (the head a hash of the whole history up
 * to the serial). A stream is reopened with `Last-Event-ID` = the id of the last event handed
 * out (the position the stream was started from before any), head included, so the server
 * checks that the history handed out is still the log's: when a failover lost moves of it,
 * the server answers with a `game` event (the log's state), which is handed out as a
 * `GameReset`, and the stream goes on from that state. An open stream's `game` event (the
 * server noticed the log rewritten under it) is handed out alike. Every serial is handed out
 * once, in order: an event that would skip a serial makes the stream reopen from the last
 * one; a serial handed out already is skipped.
 */
import { createParser, type EventSourceMessage } from "eventsource-parser";

import type { BoxfishClient, Game, Move } from "./client.js";
import { BoxfishError, Busy, ConnectionFailed, errorOf } from "./errors.js";
import type { components } from "./schema.js";

const RETRY_STATUS = new Set([429, 500, 502, 503, 504]);

/** A move of the stream (`kind: "move"`). */
export type MoveEvent = Move & { kind: "move" };

/**
 * Handed out, among the moves, when the game's log is no longer the history the stream had
 * handed out (a store failover lost moves it had yielded; others may have taken their
 * serials). `game` is the log's whole current state: whatever was built from the moves
 * handed out (a board, a move list) must be rebuilt from it; the stream goes on with the moves
 * after `game.serial`. `serial`, `to_move` (null once finished), `status`, `finished`,
 * `scores` and `position` are those of `game`, as a move has them, so a loop that only tracks
 * these takes a reset in its stride.
 */
export interface GameReset {
  kind: "reset";
  game: Game;
  serial: number;
  to_move: number | null;
  status: components["schemas"]["Status"];
  finished: boolean;
  scores: number[] | null;
  position: string | null;
}

export type GameEvent = MoveEvent | GameReset;

/** The serial of a log position: an int serial, or `"<serial>.<head>"` / `"<serial>"`. */
export function positionSerial(position: number | string): number {
  if (typeof position === "number") {
    if (!Number.isSafeInteger(position) || position < 0) {
      throw new TypeError(`a position's serial is an integer, at least 0, not ${position}`);
    }
    return position;
  }
  const match = /^(\d+)(\.[0-9a-f]+)?$/.exec(String(position));
  if (!match) throw new TypeError(`a position is a serial or '<serial>.<head>', not ${position}`);
  return Number(match[1]);
}

/** The continuity of one game's event stream: `last` is the serial of the last event handed
 * out, `position` its log position, the `Last-Event-ID` to reopen the stream with. */
export class EventSerials {
  static readonly NEXT = "next";
  static readonly SEEN = "seen";
  static readonly GAP = "gap";
  static readonly RESET = "reset";
  static readonly OTHER = "other";
  last: number;
  position: string;

  constructor(after: number | string) {
    this.last = positionSerial(after);
    this.position = String(after);
  }

  classify(event: string | undefined, id: string | undefined): string {
    if (event === "game") return EventSerials.RESET;
    if (event !== "move") return EventSerials.OTHER;
    const serial = positionSerial(id ?? "");
    if (serial <= this.last) return EventSerials.SEEN;
    return serial === this.last + 1 ? EventSerials.NEXT : EventSerials.GAP;
  }

  took(move: MoveEvent): void {
    this.last = move.serial;
    this.position = move.position ?? String(move.serial);
  }

  reset(reset: GameReset): void {
    this.last = reset.serial;
    this.position = reset.position ?? String(reset.serial);
  }
}

export function gameReset(data: components["schemas"]["Game"], position: string | null):
    GameReset {
  const finished = data.status === "finished";
  const game: Game = { ...data, finished, position };
  return { kind: "reset", game, serial: data.serial, to_move: finished ? null : data.to_move,
           status: data.status, finished, scores: data.scores ?? null, position };
}

class IdleTimeout extends Error {
  constructor(ms: number) {
    super(`nothing received for ${ms} ms`);
    this.name = "IdleTimeout";
  }
}

/** The server-sent events of one open response body; aborts `controller` (and throws) when
 * nothing, not even a keep-alive, arrives for `idleMs`. */
async function* readEvents(body: ReadableStream<Uint8Array>, idleMs: number,
                           controller: AbortController): AsyncGenerator<EventSourceMessage> {
  const queue: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => { queue.push(event); } });
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => controller.abort(new IdleTimeout(idleMs)), idleMs);
  };
  try {
    arm();
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      arm();
      parser.feed(decoder.decode(value, { stream: true }));
      while (queue.length) yield queue.shift()!;
    }
  } finally {
    clearTimeout(timer);
    reader.releaseLock();
  }
}

/** The steps of `BoxfishClient.events` (see there and the module). */
export async function* followEvents(client: BoxfishClient, gameId: string,
                                    after: number | string, idleTimeoutMs: number,
                                    signal?: AbortSignal): AsyncGenerator<GameEvent> {
  const serials = new EventSerials(after);
  const path = `/v1/games/${encodeURIComponent(gameId)}/events`;
  let failures = 0;
  while (true) {
    let error: unknown = null;
    let yielded = false;
    let ended = false;
    let last: GameEvent | null = null;
    const controller = new AbortController();
    const onAbort = () => controller.abort(signal!.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    // Until the answer's head has come, the client's timeout; then only the idle timeout
    // (and the consumer's signal) end the stream.
    const connecting = setTimeout(() => controller.abort(new IdleTimeout(client.timeoutMs)),
                                  client.timeoutMs);
    try {
      const resp = await client.fetchImpl(client.url(path), {
        headers: { ...client.headers, "Last-Event-ID": serials.position,
                   Accept: "text/event-stream" },
        signal: controller.signal,
      });
      clearTimeout(connecting);
      client.answered = true;
      if (resp.status !== 200) {
        error = await errorOf(resp);
        if (!RETRY_STATUS.has(resp.status)) throw error;
      } else {
        let gap = false;
        drain: for await (const sse of readEvents(resp.body!, idleTimeoutMs, controller)) {
          const kind = serials.classify(sse.event, sse.id);
          let event: GameEvent;
          switch (kind) {
            case EventSerials.GAP:
              gap = true; // reopen from the last serial handed out
              break drain;
            case EventSerials.RESET:
              event = gameReset(JSON.parse(sse.data), sse.id || null);
              serials.reset(event);
              break;
            case EventSerials.NEXT: {
              const data = JSON.parse(sse.data) as components["schemas"]["MoveResult"];
              const move: MoveEvent = {
                ...data, kind: "move", finished: data.status === "finished",
                position: sse.id || data.position || null, replayed: false };
              serials.took(move);
              event = move;
              break;
            }
            default:
              continue;
          }
          if (event.finished) {
            last = event;
            break;
          }
          yielded = true;
          yield event;
        }
        ended = !gap;
      }
    } catch (e) {
      if (signal?.aborted) throw signal.reason;
      if (e instanceof BoxfishError) throw e;
      error = controller.signal.reason instanceof IdleTimeout ? controller.signal.reason : e;
      ended = false;
    } finally {
      clearTimeout(connecting);
      signal?.removeEventListener("abort", onAbort);
      controller.abort();
    }
    if (last !== null) {
      // Handed out once its stream is closed: a consumer that stops at the game's end
      // leaves nothing open.
      yield last;
      return;
    }
    if (ended && !yielded && error === null) {
      // The stream ended at once, without the game's end: is the game over?
      try {
        const game = await client.getGame(gameId);
        if (game.finished && game.serial <= serials.last) return;
      } catch (e) {
        if (!(e instanceof ConnectionFailed || e instanceof Busy)) throw e;
        error = e;
      }
    }
    if (yielded) {
      failures = 0;
      continue;
    }
    if (failures >= client.retriesAfter(error)) {
      if (error instanceof BoxfishError) throw error;
      throw new ConnectionFailed(null, null, `event stream of ${gameId}: no answer after `
        + `${failures + 1} attempts (${String(error)})`, { cause: error });
    }
    const delayMs = client.delay(failures, error instanceof Busy ? error.retryAfter : null);
    if (delayMs === null) throw error;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => { signal?.removeEventListener("abort", stop); resolve(); },
                               delayMs);
      const stop = () => { clearTimeout(timer); reject(signal!.reason); };
      signal?.addEventListener("abort", stop, { once: true });
    });
    failures++;
  }
}
