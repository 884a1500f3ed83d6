/** @boxfish/client: a typed client of the Boxfish API for Node 20+ (see README.md). */
export * from "./client.js";
export * from "./errors.js";
export {
  EventSerials, gameReset, positionSerial, type GameEvent, type GameReset, type MoveEvent,
} from "./events.js";
export { verifyWebhook, type WebhookEvent } from "./webhooks.js";
export type { components, operations, paths } from "./schema.js";
