/**
 * The errors of the Boxfish client, typed from the server's RFC 9457 problem bodies
 * (`application/problem+json`: `type` `urn:boxfish:problem:<name>` or `about:blank`, `title`,
 * `status`, `detail` and extension members such as `reason` and `current_serial`). The whole
 * body stays reachable as `problem`. The same classes as the Python client's
 * (`boxfish.client.errors`).
 */
import type { components } from "./schema.js";

export type Problem = components["schemas"]["Problem"];

export const PROBLEM_BASE = "urn:boxfish:problem:";

/** An error answer of the API (or, with `status` null, no answer at all). */
export class BoxfishError extends Error {
  /** The HTTP status; null when no answer came (ConnectionFailed). */
  readonly status: number | null;
  /** The problem+json body (empty when the server sent none). */
  readonly problem: Partial<Problem> & Record<string, unknown>;
  readonly type: string;
  readonly title: string;
  readonly detail: string;
  /** The problem's `reason` (422, 409 ...), null when absent. */
  readonly reason: string | null;

  constructor(status: number | null, problem?: Record<string, unknown> | null, message?: string,
              options?: { cause?: unknown }) {
    const body = (problem ?? {}) as Partial<Problem> & Record<string, unknown>;
    const type = typeof body.type === "string" ? body.type : "about:blank";
    const title = typeof body.title === "string" ? body.title : "";
    const detail = (typeof body.detail === "string" && body.detail) || message || title;
    const slug = type.startsWith(PROBLEM_BASE) ? type.slice(PROBLEM_BASE.length) : "";
    super(message ?? `${status} ${slug || title}: ${detail}`, options);
    this.name = new.target.name;
    this.status = status;
    this.problem = body;
    this.type = type;
    this.title = title;
    this.detail = detail;
    this.reason = typeof body.reason === "string" ? body.reason : null;
  }

  /** The problem type's name (`illegal-move`, ...), empty for `about:blank`. */
  get slug(): string {
    return this.type.startsWith(PROBLEM_BASE) ? this.type.slice(PROBLEM_BASE.length) : "";
  }
}

/** 422 `illegal-move`: the engine refused the move; `reason` says why (`already_drawn`, ...). */
export class IllegalMove extends BoxfishError {}

/** 422 other than an illegal move (`invalid_request`, `limit_exceeded`,
 * `idempotency_key_reused`, ...; validation `errors` in `problem`). */
export class InvalidRequest extends BoxfishError {}

/** 422 `invalid-record`: an imported record refused (nothing was created). */
export class InvalidRecord extends InvalidRequest {
  get moveNumber(): number | null {
    return typeof this.problem.move_number === "number" ? this.problem.move_number : null;
  }
  get line(): number | null {
    return typeof this.problem.line === "number" ? this.problem.line : null;
  }
  get moveReason(): string | null {
    return typeof this.problem.move_reason === "string" ? this.problem.move_reason : null;
  }
}

/** 409: the move's `serial` is not the game's serial + 1 (`currentSerial` is the game's
 * serial now); or, `reason` `engine_seat`, a move while the engine is to move. */
export class SerialConflict extends BoxfishError {
  get currentSerial(): number | null {
    return typeof this.problem.current_serial === "number" ? this.problem.current_serial : null;
  }
}

/** 404: no such game, analysis, review, webhook (or stored position). */
export class NotFound extends BoxfishError {}

/** 401: the write token is missing or not a Bearer token. */
export class Unauthorized extends BoxfishError {}

/** 403: the write token belongs to another game. */
export class Forbidden extends BoxfishError {}

/** 503 or 429 still so after the client's retries; `retryAfter` the seconds the server asked
 * to wait (null if it named none). */
export class Busy extends BoxfishError {
  readonly retryAfter: number | null;
  constructor(status: number | null, problem?: Record<string, unknown> | null,
              message?: string, retryAfter: number | null = null) {
    super(status, problem, message);
    this.retryAfter = retryAfter;
  }
}

/** No answer: the connection failed on every attempt (`status` null; `cause` the last
 * transport error). */
export class ConnectionFailed extends BoxfishError {}

/** The analysis job failed on the server; `detail` is its `error`. */
export class AnalysisFailed extends BoxfishError {}

/** 409 `nothing-to-review`: a review of a game that has no moves yet. */
export class NothingToReview extends BoxfishError {}

/** The review job failed on the server; `detail` is its `error`. */
export class ReviewFailed extends BoxfishError {}

/** A webhook delivery whose signature, or timestamp, does not verify. */
export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WebhookVerificationError";
  }
}

/** A `Retry-After` header's delay in seconds (delta-seconds or an HTTP date), null if absent
 * or unreadable. */
export function retryAfterSeconds(value: string | null | undefined): number | null {
  if (!value) return null;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.max(0, Number(text));
  const when = Date.parse(text);
  return Number.isNaN(when) ? null : Math.max(0, (when - Date.now()) / 1000);
}

/** The typed error of an error answer: `body` its parsed JSON (anything else when it was
 * not JSON), `headers` its headers (for `Retry-After`). */
export function errorFromResponse(status: number, body: unknown, headers: Headers): BoxfishError {
  const problem = body !== null && typeof body === "object" && !Array.isArray(body)
    ? body as Record<string, unknown> : {};
  const slug = new BoxfishError(status, problem).slug;
  if (status === 429 || status === 503) {
    return new Busy(status, problem, undefined, retryAfterSeconds(headers.get("Retry-After")));
  }
  if (status === 422) {
    if (slug === "illegal-move") return new IllegalMove(status, problem);
    if (slug === "invalid-record") return new InvalidRecord(status, problem);
    return new InvalidRequest(status, problem);
  }
  if (status === 409 && slug === "nothing-to-review") return new NothingToReview(status, problem);
  switch (status) {
    case 409: return new SerialConflict(status, problem);
    case 404: return new NotFound(status, problem);
    case 401: return new Unauthorized(status, problem);
    case 403: return new Forbidden(status, problem);
    default: return new BoxfishError(status, problem);
  }
}

/** The typed error of an error answer (its body read). */
export async function errorOf(resp: Response): Promise<BoxfishError> {
  let body: unknown = null;
  try {
    body = JSON.parse(await resp.text());
  } catch {
    body = null;
  }
  return errorFromResponse(resp.status, body, resp.headers);
}

