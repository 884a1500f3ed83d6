/**
 * Verifying a webhook delivery (Standard Webhooks: `webhook-id`, `webhook-timestamp` and
 * `webhook-signature`, `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`) with the
 * `standardwebhooks` package.
 */
import { Webhook } from "standardwebhooks";
import { WebhookVerificationError } from "./errors.js";
import type { components } from "./schema.js";

/** What a game's webhook delivers. */
export type WebhookEvent =
  | components["schemas"]["MoveAppendedEvent"]
  | components["schemas"]["GameFinishedEvent"]
  | components["schemas"]["ReviewFinishedEvent"];

type HeaderSource = Headers | Record<string, string | string[] | undefined>;

function plainHeaders(headers: HeaderSource): Record<string, string> {
  const out: Record<string, string> = {};
  if (headers instanceof Headers) {
    headers.forEach((value, name) => { out[name.toLowerCase()] = value; });
    return out;
  }
  for (const [name, value] of Object.entries(headers as Record<string, unknown>)) {
    if (value === undefined) continue;
    out[name.toLowerCase()] = Array.isArray(value) ? value.join(" ") : String(value);
  }
  return out;
}

/**
 * The delivery's JSON payload, once its signature verifies.
 *
 * `secret`: the webhook's `whsec_...` secret (from `addWebhook`); `headers`: the delivery's
 * headers (a fetch `Headers`, or Node's `req.headers`; names in any case); `body`: its raw
 * body exactly as received (a string, a Buffer or bytes; never re-serialised JSON). Throws
 * `WebhookVerificationError` when a header is missing or malformed, no `v1` signature matches
 * (constant-time compare), or the timestamp is more than 5 minutes away from now.
 */
export function verifyWebhook<T = WebhookEvent>(secret: string, headers: HeaderSource,
                                                body: string | Uint8Array): T {
  let webhook: Webhook;
  try {
    webhook = new Webhook(secret);
  } catch (error) {
    throw new WebhookVerificationError(`unreadable webhook secret: ${(error as Error).message}`);
  }
  const payload = typeof body === "string" ? body : Buffer.from(body).toString("utf8");
  try {
    return webhook.verify(payload, plainHeaders(headers)) as T;
  } catch (error) {
    if (error instanceof WebhookVerificationError) throw error;
    throw new WebhookVerificationError((error as Error).message || String(error));
  }
}
