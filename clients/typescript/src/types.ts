/** The document's schemas, named as in openapi/openapi.json (generated into schema.ts). */
import type { components } from "./schema.js";

type S = components["schemas"];
export type SessionQAEntry = S["SessionQAEntry"];
export type Erasure = S["Erasure"];
export type AppendEntryRequest = S["AppendEntryRequest"];
export type UpdateEntryRequest = S["UpdateEntryRequest"];
export type FeedbackRequest = S["FeedbackRequest"];
export type AgentTrace = S["AgentTrace"];
export type AppendTraceRequest = S["AppendTraceRequest"];
export type ContextEntry = S["ContextEntry"];
export type TTL = S["TTL"];
export type SessionStatus = S["SessionStatus"];
export type SessionRecord = S["SessionRecord"];
export type SessionList = S["SessionList"];
export type UsageRequest = S["UsageRequest"];
export type UsageResult = S["UsageResult"];
export type SessionStats = S["SessionStats"];
export type CostByModel = S["CostByModel"];
export type AcquireLockRequest = S["AcquireLockRequest"];
export type LockGrant = S["LockGrant"];
export type LockInfo = S["LockInfo"];
export type CreateSessionRequest = S["CreateSessionRequest"];
export type UpdateSessionRequest = S["UpdateSessionRequest"];
export type StartSessionRequest = S["StartSessionRequest"];
export type SessionStart = S["SessionStart"];
export type EndActiveSessionRequest = S["EndActiveSessionRequest"];
export type State = S["State"];
export type SearchResult = S["SearchResult"];

/**
 * An answer of a call that may store or find: `created` is true when this
 * call stored it (201), false for a safe repeat (200: nothing written, the
 * stored value). `created` is not enumerable: JSON.stringify leaves it out.
 */
export type Stored<T> = T & { readonly created: boolean };

/** Options of the session listings. */
export interface ListSessionsOptions {
  status?: SessionStatus;
  limit?: number;
  cursor?: string;
  /** Only sessions whose metadata holds every pair (metadata.<key>=<value>). */
  metadata?: Record<string, string>;
}
