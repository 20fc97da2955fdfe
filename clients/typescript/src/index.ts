/**
 * @agentsidecar/client: the TypeScript client of the sidecar's /v1 API.
 *
 *   const sc = new Sidecar("http://127.0.0.1:7480", { token: process.env.SIDECAR_API_TOKEN });
 *   await sc.appendEntry("alice", "chat-1", { question: "Where is the dog?", answer: "In the garden" });
 *   await sc.withLock("graph_writes", { ttl: 30, wait: 10 }, async (lock) => write(lock.fencingToken));
 */
export { DEFAULT_USER_AGENT, SidecarCore, type SidecarOptions } from "./client.js";
export { Sidecar, type AdkSession, type AdkSessionList, type Block, type Compaction, type ListMessagesOptions, type Message, type MessagePage, type MessageTransaction, type MessageTransactionResult } from "./sidecar.js";
export { BadID, LockHeld, LockLost, SidecarError } from "./errors.js";
export type { SidecarEvent } from "./events.js";
export { Lock, type LockOptions } from "./lock.js";
export type { components, operations, paths } from "./schema.js";
export type * from "./types.js";
