/**
 * The Boxfish client: typed calls of the API (types generated from openapi.yaml into
 * `schema.ts`), over the global `fetch` of Node 20+.
 *
 * Retries: a request that got no answer (connection refused, dropped, timed out) or an answer
 * 429, 500, 502, 503 or 504 is sent again, up to `retries` times, after an exponential backoff
 * with jitter (`backoffMs` * 2^attempt, at most `maxDelayMs`, times a random 0.5 to 1), or
 * after the `Retry-After` the server named (one longer than `maxDelayMs` is not waited for:
 * the error is thrown at once). Until the client has had any answer from the server, a
 * request that could not connect at all is retried at most `firstContactRetries` times, so a
 * wrong URL fails fast with ConnectionFailed. A request that is not idempotent (creating a
 * game, a review, a webhook) is resent only when it surely changed nothing (no connection,
 * 429, 503).
 *
 * `play` sends one `Idempotency-Key` for all the attempts of a move, so a move whose answer
 * was lost is stored once (the retry gets the stored move back, `replayed`); `importRecord`
 * does the same for the game it makes.
 *
 * Event streams: see `events` and `./events.ts`.
 */
import { randomUUID } from "node:crypto";

import {
  AnalysisFailed,
  BoxfishError,
  Busy,
  ConnectionFailed,
  errorOf,
  NotFound,
  retryAfterSeconds,
  ReviewFailed,
} from "./errors.js";
import { followEvents, positionSerial, type GameEvent } from "./events.js";
import type { components, operations, paths } from "./schema.js";

type Schemas = components["schemas"];
type JsonBody<Op> = Op extends { requestBody?: { content: { "application/json": infer B } } }
  ? B : never;

export type GameName = Schemas["GameName"];
export type MoveValue = Schemas["Move"];
/** A game's state, with `position` (its log position `<serial>.<head>`, the ETag) and
 * `finished`. */
export type Game = Schemas["Game"] & { position: string | null; finished: boolean };
/** A new game: its state and the secret `write_token` (shown only here). */
export type NewGame = Game & { write_token: string };
export type CreateGameRequest = JsonBody<operations["createGame"]>;
export type GameListItem = Schemas["GameListItem"];
export type MoveSummary = Schemas["MoveSummary"];
/** A stored move (from `play` or `events`): what it left (`scores`, `to_move`, `status`),
 * its log `position` and `finished`; `replayed`: `play` got the answer of an earlier attempt
 * of the same move (it was stored once). */
export type Move = Omit<Schemas["MoveResult"], "position"> & {
  position: string | null;
  finished: boolean;
  replayed: boolean;
};
export type AnalysisJob = Schemas["AnalysisJob"];
export type AnalysisResult = NonNullable<Schemas["AnalysisResult"]>;
/** A finished analysis job (its `result` set). */
export type Analysis = Omit<AnalysisJob, "status" | "result"> & {
  status: "finished";
  result: AnalysisResult;
};
export type PositionAnalysisRequest = JsonBody<operations["submitAnalysis"]>;
export type GameAnalysisRequest = Schemas["GameAnalysisRequest"];
export type Review = Schemas["Review"];
export type StoredPosition = Schemas["StoredPosition"];
export type Webhook = Schemas["Webhook"];
export type NewWebhook = Webhook & { secret: string };
export type GameEventType = Schemas["GameEventType"];
export type Paths = paths;

export interface ClientOptions {
  /** The write token used by `play`, `addWebhook`, ... when they are given none. */
  token?: string;
  /** Milliseconds for each request (a `wait` is added to it). Default 10000. */
  timeoutMs?: number;
  /** Retries of a request that got no answer, or 429/5xx. Default 6. */
  retries?: number;
  /** The first backoff, in ms (doubled at each retry). Default 250. */
  backoffMs?: number;
  /** The longest wait before a retry, in ms. Default 30000. */
  maxDelayMs?: number;
  /** Retries of a request that could not connect, before any answer came. Default 1. */
  firstContactRetries?: number;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
  /** Extra headers sent with every request. */
  headers?: Record<string, string>;
}

interface SendOptions {
  query?: Record<string, string | number | undefined>;
  json?: unknown;
  text?: string;
  headers?: Record<string, string>;
  idempotent?: boolean;
  extraTimeoutMs?: number;
  signal?: AbortSignal;
}

const RETRY_STATUS = new Set([429, 500, 502, 503, 504]);
const REFUSED_STATUS = new Set([429, 503]);
const NOT_SENT_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH",
  "ENETUNREACH", "UND_ERR_CONNECT_TIMEOUT"]);
const DONE = new Set(["finished", "failed"]);

/** The log position an ETag names (`"3.5f0c2a9e41b7d803"` -> `3.5f0c2a9e41b7d803`). */
export function etagPosition(etag: string | null): string | null {
  if (!etag) return null;
  let text = etag.trim();
  if (text.startsWith("W/")) text = text.slice(2);
  return text.replace(/^"|"$/g, "") || null;
}

/** Whether a transport error surely happened before the request left (no connection). */
export function notSent(error: unknown): boolean {
  let e: unknown = error;
  for (let depth = 0; e && depth < 4; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && NOT_SENT_CODES.has(code)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => { signal?.removeEventListener("abort", onAbort); resolve(); }, ms);
    const onAbort = () => { clearTimeout(timer); reject(signal!.reason); };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function withFinished<T extends { status?: string }>(data: T) {
  return { ...data, finished: data.status === "finished" };
}

export class BoxfishClient {
  readonly baseUrl: string;
  token: string | undefined;
  readonly timeoutMs: number;
  readonly retries: number;
  readonly backoffMs: number;
  readonly maxDelayMs: number;
  readonly firstContactRetries: number;
  /** Whether any answer has come from the server yet (see the module). */
  answered = false;
  readonly fetchImpl: typeof fetch;
  readonly headers: Record<string, string>;

  constructor(baseUrl: string, options: ClientOptions = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.token = options.token;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.retries = options.retries ?? 6;
    this.backoffMs = options.backoffMs ?? 250;
    this.maxDelayMs = options.maxDelayMs ?? 30_000;
    this.firstContactRetries = options.firstContactRetries ?? 1;
    this.fetchImpl = options.fetch ?? globalThis.fetch;
    this.headers = { "User-Agent": "boxfish-client-ts", ...options.headers };
  }

  // -- plumbing -------------------------------------------------------------------------

  /** `/v1/` and the parts, each percent-encoded. */
  static path(...parts: (string | number)[]): string {
    return "/v1/" + parts.map((p) => encodeURIComponent(String(p))).join("/");
  }

  auth(token?: string | null): Record<string, string> {
    const t = token ?? this.token;
    return t ? { Authorization: `Bearer ${t}` } : {};
  }

  /** How many retries a request that failed with `error` may have. */
  retriesAfter(error: unknown): number {
    if (!this.answered && !(error instanceof BoxfishError) && notSent(error)) {
      return Math.min(this.retries, this.firstContactRetries);
    }
    return this.retries;
  }

  /** Milliseconds to wait before retry `attempt` + 1; null when the server asks for more
   * than `maxDelayMs`. */
  delay(attempt: number, retryAfterS: number | null = null): number | null {
    if (retryAfterS !== null) {
      const ms = retryAfterS * 1000;
      return ms <= this.maxDelayMs ? ms : null;
    }
    return Math.min(this.maxDelayMs, this.backoffMs * 2 ** attempt) * (0.5 + Math.random() / 2);
  }

  url(path: string, query?: Record<string, string | number | undefined>): string {
    const url = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v !== undefined) url.searchParams.set(k, String(v));
    }
    return url.toString();
  }

  /** One fetch (no retry), with the client's headers and timeout. */
  fetchOnce(method: string, path: string, options: SendOptions = {}): Promise<Response> {
    const headers: Record<string, string> = { ...this.headers, ...options.headers };
    let body: string | undefined;
    if (options.json !== undefined) {
      body = JSON.stringify(options.json);
      headers["Content-Type"] = "application/json";
    } else if (options.text !== undefined) {
      body = options.text;
      headers["Content-Type"] ??= "text/plain; charset=utf-8";
    }
    const timeout = AbortSignal.timeout(this.timeoutMs + (options.extraTimeoutMs ?? 0));
    const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
    return this.fetchImpl(this.url(path, options.query), { method, headers, body, signal });
  }

  /** The 2xx answer to the request (retried as the module says), or the typed error. */
  async send(method: string, path: string, options: SendOptions = {}): Promise<Response> {
    const idempotent = options.idempotent ?? true;
    for (let attempt = 0; ; attempt++) {
      let delayMs: number | null;
      let resp: Response;
      try {
        resp = await this.fetchOnce(method, path, options);
      } catch (error) {
        if (options.signal?.aborted) throw options.signal.reason;
        if (attempt >= this.retriesAfter(error) || !(idempotent || notSent(error))) {
          throw new ConnectionFailed(null, null, `${method} ${path}: no answer after `
            + `${attempt + 1} attempt(s) (${describe(error)})`, { cause: error });
        }
        delayMs = this.delay(attempt)!;
        await sleep(delayMs, options.signal);
        continue;
      }
      this.answered = true;
      if (resp.status < 400) return resp;
      const error = await errorOf(resp);
      const retryable = idempotent ? RETRY_STATUS : REFUSED_STATUS;
      if (attempt >= this.retries || !retryable.has(resp.status)) throw error;
      delayMs = this.delay(attempt, error instanceof Busy ? error.retryAfter : null);
      if (delayMs === null) throw error;
      await sleep(delayMs, options.signal);
    }
  }

  // -- games ------------------------------------------------------------------------------

  /** Create a game (`POST /v1/games`), e.g. `{game: "dots-and-boxes", width: 3, height: 3,
   * engine: {seat: 1, time_ms: 200}}`; the answer carries the secret `write_token`. Not
   * idempotent: retried only when surely nothing was made. */
  async createGame(request: CreateGameRequest): Promise<NewGame> {
    const resp = await this.send("POST", BoxfishClient.path("games"),
                                 { json: request, idempotent: false });
    const data = await resp.json() as Schemas["Game"] & { write_token: string };
    return { ...withFinished(data), position: etagPosition(resp.headers.get("ETag")) };
  }

  /** A game's current state (`GET /v1/games/{id}`), with `position` from its ETag. */
  async getGame(gameId: string): Promise<Game> {
    const resp = await this.send("GET", BoxfishClient.path("games", gameId));
    const data = await resp.json() as Schemas["Game"];
    return { ...withFinished(data), position: etagPosition(resp.headers.get("ETag")) };
  }

  /** The most recently created games, newest first (`GET /v1/games`). */
  async listGames(limit?: number): Promise<GameListItem[]> {
    const resp = await this.send("GET", BoxfishClient.path("games"), { query: { limit } });
    return (await resp.json() as { games: GameListItem[] }).games;
  }

  /** The moves with serial > `after` (`GET /v1/games/{id}/moves`). */
  async moves(gameId: string, after = 0): Promise<MoveSummary[]> {
    const resp = await this.send("GET", BoxfishClient.path("games", gameId, "moves"),
                                 { query: { after } });
    return (await resp.json() as { moves: MoveSummary[] }).moves;
  }

  /**
   * Append `move` (`POST /v1/games/{id}/moves`) with the write `token` (default: the
   * client's). `serial`: the serial the move must take (the game's serial + 1), else a
   * SerialConflict with `currentSerial`. Every attempt carries one `Idempotency-Key`
   * (`idempotencyKey`, else a new random one): a move whose answer was lost is stored once,
   * and the retry answers `replayed: true`. Throws IllegalMove, SerialConflict, InvalidRequest
   * (`idempotency_key_reused`), Unauthorized, Forbidden, NotFound, Busy, ConnectionFailed.
   */
  async play(gameId: string, move: MoveValue,
             options: { serial?: number; token?: string; idempotencyKey?: string } = {}):
      Promise<Move> {
    const body: Schemas["AppendMove"] = { move };
    if (options.serial !== undefined) body.serial = options.serial;
    const headers = { "Idempotency-Key": options.idempotencyKey ?? randomUUID(),
                      ...this.auth(options.token) };
    const resp = await this.send("POST", BoxfishClient.path("games", gameId, "moves"),
                                 { json: body, headers });
    const data = await resp.json() as Schemas["MoveResult"];
    return { ...withFinished(data), position: data.position ?? null,
             replayed: resp.headers.get("Idempotent-Replayed") === "true" };
  }

  /** Ask the engine seat to move again after its job failed
   * (`POST /v1/games/{id}/engine/retry`). */
  async retryEngine(gameId: string, token?: string): Promise<Game> {
    const resp = await this.send("POST", BoxfishClient.path("games", gameId, "engine", "retry"),
                                 { headers: this.auth(token) });
    const data = await resp.json() as Schemas["Game"];
    return { ...withFinished(data), position: etagPosition(resp.headers.get("ETag")) };
  }

  /**
   * The game's moves after `after` as they are appended, each exactly once and in serial
   * order, and a `GameReset` whenever the game's log is no longer the history handed out (see
   * `./events.ts`); the iteration ends after the move that finishes the game. `after`: a
   * serial (trusted) or a log position `<serial>.<head>` (a Game's, Move's or reset's
   * `position`: checked by the server). A dropped stream is reopened with `Last-Event-ID` =
   * the position of the last item handed out. Nothing is sent before the first `next()`.
   */
  events(gameId: string, options: { after?: number | string; idleTimeoutMs?: number;
                                     signal?: AbortSignal } = {}): AsyncGenerator<GameEvent> {
    positionSerial(options.after ?? 0); // a TypeError now, for an `after` that is no position
    return followEvents(this, gameId, options.after ?? 0, options.idleTimeoutMs ?? 60_000,
                        options.signal);
  }

  // -- analyses ---------------------------------------------------------------------------

  /**
   * Analyse a stored game at serial `at` (default: its current one;
   * `POST /v1/games/{id}/analyses`) or a `position` (the body of `POST /v1/analyses`), and
   * wait for the result: the server holds the answer up to `waitS` seconds (default 5, at most
   * its `max_wait_s`); while the job is queued or running it is polled (honouring
   * `Retry-After`) until it ends or `timeoutMs` has passed (an Error named TimeoutError).
   * Throws AnalysisFailed when the job failed, InvalidRequest, IllegalMove, NotFound, Busy.
   */
  async analyse(options: {
    gameId?: string; position?: PositionAnalysisRequest; at?: number; timeMs?: number;
    multipv?: number; core?: "c" | "python"; waitS?: number; timeoutMs?: number;
  }): Promise<Analysis> {
    const { gameId, position } = options;
    if ((gameId === undefined) === (position === undefined)) {
      throw new TypeError("give either gameId or position");
    }
    const extra: Record<string, unknown> = {};
    if (options.timeMs !== undefined) extra.time_ms = options.timeMs;
    if (options.multipv !== undefined) extra.multipv = options.multipv;
    if (options.core !== undefined) extra.core = options.core;
    let path: string;
    let body: Record<string, unknown>;
    if (gameId !== undefined) {
      path = BoxfishClient.path("games", gameId, "analyses");
      body = options.at !== undefined ? { ...extra, at: options.at } : extra;
    } else {
      path = BoxfishClient.path("analyses");
      body = { ...position, ...extra };
    }
    const waitS = options.waitS ?? 5;
    const deadline = options.timeoutMs === undefined ? null : Date.now() + options.timeoutMs;
    let resp = await this.send("POST", path, { json: body, query: { wait: waitS },
                                              extraTimeoutMs: waitS * 1000 });
    let data = await resp.json() as AnalysisJob;
    let interval = 50;
    while (!DONE.has(data.status)) {
      if (deadline !== null && Date.now() >= deadline) {
        throw timeoutError(`analysis ${data.id} still ${data.status} after ${options.timeoutMs} ms`);
      }
      const asked = retryAfterSeconds(resp.headers.get("Retry-After"));
      let delayMs = asked === null ? interval : Math.min(asked * 1000, this.maxDelayMs);
      if (deadline !== null) delayMs = Math.max(0, Math.min(delayMs, deadline - Date.now()));
      await sleep(delayMs);
      interval = Math.min(1000, interval * 2);
      resp = await this.send("GET", BoxfishClient.path("analyses", data.id));
      data = await resp.json() as AnalysisJob;
    }
    if (data.status === "failed") {
      throw new AnalysisFailed(resp.status, { type: "about:blank", title: "Analysis failed",
                                              detail: data.error || "the analysis failed" });
    }
    return data as unknown as Analysis;
  }

  /** An analysis job as it is now (`GET /v1/analyses/{id}`). */
  async getAnalysis(analysisId: string): Promise<AnalysisJob> {
    const resp = await this.send("GET", BoxfishClient.path("analyses", analysisId));
    return await resp.json() as AnalysisJob;
  }

  // -- reviews and the store of exact values ----------------------------------------------

  /**
   * Review the stored game as its log is now (`POST /v1/games/{id}/reviews`; `timeMs` per
   * position) and wait for the result (`GET /v1/reviews/{id}?wait=`, `waitS` each) until it
   * ends or `timeoutMs` has passed. Throws ReviewFailed, NotFound, NothingToReview (a game
   * without moves), InvalidRequest, Busy.
   */
  async review(gameId: string, options: { timeMs?: number; waitS?: number;
                                          timeoutMs?: number } = {}): Promise<Review> {
    const waitS = options.waitS ?? 5;
    const deadline = options.timeoutMs === undefined ? null : Date.now() + options.timeoutMs;
    const body = options.timeMs === undefined ? {} : { time_ms: options.timeMs };
    // not retried once sent: every POST makes a review of its own
    let resp = await this.send("POST", BoxfishClient.path("games", gameId, "reviews"),
                               { json: body, query: { wait: waitS }, idempotent: false,
                                 extraTimeoutMs: waitS * 1000 });
    let data = await resp.json() as Review;
    while (!DONE.has(data.status)) {
      let hold = waitS;
      if (deadline !== null) {
        const left = (deadline - Date.now()) / 1000;
        if (left <= 0) {
          throw timeoutError(`review ${data.id} still ${data.status} after ${options.timeoutMs} ms`);
        }
        hold = Math.min(waitS, left);
      }
      resp = await this.send("GET", BoxfishClient.path("reviews", data.id),
                             { query: { wait: hold.toFixed(3) }, extraTimeoutMs: hold * 1000 });
      data = await resp.json() as Review;
      if (!DONE.has(data.status) && hold <= 0) await sleep(50);
    }
    if (data.status === "failed") {
      throw new ReviewFailed(resp.status, { type: "about:blank", title: "Review failed",
                                            detail: data.error || "the review failed" });
    }
    return data;
  }

  /** A review as it is now, held up to `waitS` seconds while it runs
   * (`GET /v1/reviews/{id}`). */
  async getReview(reviewId: string, waitS?: number): Promise<Review> {
    const resp = await this.send("GET", BoxfishClient.path("reviews", reviewId),
                                 { query: { wait: waitS }, extraTimeoutMs: (waitS ?? 0) * 1000 });
    return await resp.json() as Review;
  }

  /**
   * A Dots-and-Boxes position's exact value from the server's store of exact values, with no
   * search (`GET /v1/positions`): by its OpenSpiel `lines`, or by its `moves` from the start.
   * Null when none is stored (404).
   */
  async storedPosition(query: { width: number; height: number; lines?: string;
                                moves?: number[][] }): Promise<StoredPosition | null> {
    const params: Record<string, string | number> = { game: "dots-and-boxes",
                                                      width: query.width, height: query.height };
    if (query.lines !== undefined) params.lines = query.lines;
    if (query.moves !== undefined) params.moves = JSON.stringify(query.moves);
    try {
      const resp = await this.send("GET", BoxfishClient.path("positions"), { query: params });
      return await resp.json() as StoredPosition;
    } catch (error) {
      if (error instanceof NotFound) return null;
      throw error;
    }
  }

  // -- webhooks ---------------------------------------------------------------------------

  /** Register `url` for the game's deliveries (`POST /v1/games/{id}/webhooks`, with the write
   * token); `events` names the kinds (default: the server's). The answer's `secret`
   * (`whsec_...`, shown only here) is what `verifyWebhook` takes. */
  async addWebhook(gameId: string, url: string,
                   options: { events?: GameEventType[]; token?: string } = {}):
      Promise<NewWebhook> {
    const body: Schemas["CreateWebhook"] = { url };
    if (options.events !== undefined) body.events = options.events;
    const resp = await this.send("POST", BoxfishClient.path("games", gameId, "webhooks"),
                                 { json: body, headers: this.auth(options.token),
                                   idempotent: false });
    return await resp.json() as NewWebhook;
  }

  /** The game's webhooks, without secrets (`GET /v1/games/{id}/webhooks`). */
  async listWebhooks(gameId: string, token?: string): Promise<Webhook[]> {
    const resp = await this.send("GET", BoxfishClient.path("games", gameId, "webhooks"),
                                 { headers: this.auth(token) });
    return (await resp.json() as { webhooks: Webhook[] }).webhooks;
  }

  /** Remove a webhook (`DELETE /v1/games/{id}/webhooks/{webhook_id}`). */
  async deleteWebhook(gameId: string, webhookId: string, token?: string): Promise<void> {
    await this.send("DELETE", BoxfishClient.path("games", gameId, "webhooks", webhookId),
                    { headers: this.auth(token) });
  }

  // -- records ----------------------------------------------------------------------------

  /** The game's record (`GET /v1/games/{id}/record`, docs/records.md), up to serial `at`. */
  async exportRecord(gameId: string, at?: number): Promise<string> {
    const resp = await this.send("GET", BoxfishClient.path("games", gameId, "record"),
                                 { query: { at } });
    return await resp.text();
  }

  /** A new game of `record` (`POST /v1/games/import`): a Boxfish record, or with
   * `format: "openspiel"` OpenSpiel's Dots-and-Boxes actions (with `width` and `height` for a
   * bare action list). Every attempt carries one `Idempotency-Key`, so one game is made
   * however many answers were lost. Throws InvalidRecord (nothing was made). */
  async importRecord(record: string, options: { format?: "boxfish" | "openspiel";
                                                width?: number; height?: number;
                                                idempotencyKey?: string } = {}):
      Promise<NewGame> {
    const headers = { "Idempotency-Key": options.idempotencyKey ?? randomUUID() };
    const format = options.format ?? "boxfish";
    let resp: Response;
    if (format === "boxfish") {
      resp = await this.send("POST", BoxfishClient.path("games", "import"),
                             { text: record, headers });
    } else {
      const body: Record<string, unknown> = { record, format };
      if (options.width !== undefined) body.width = options.width;
      if (options.height !== undefined) body.height = options.height;
      resp = await this.send("POST", BoxfishClient.path("games", "import"),
                             { json: body, headers });
    }
    const data = await resp.json() as Schemas["Game"] & { write_token: string };
    return { ...withFinished(data), position: etagPosition(resp.headers.get("ETag")) };
  }
}

export function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  const inner = cause instanceof Error ? `: ${cause.message}` : "";
  return `${error.name}: ${error.message}${inner}`;
}

function timeoutError(message: string): Error {
  const error = new Error(message);
  error.name = "TimeoutError";
  return error;
}
