/**
 * Sidecar: SidecarCore plus the messages, blocks and events calls. These go
 * through `raw` (plain fetch, same errors and retries) until their routes
 * are in the generated types.
 */
import { randomUUID } from "node:crypto";

import { SidecarCore, ids, stored } from "./client.js";
import { type SidecarEvent, eventStream } from "./events.js";
import type { components } from "./schema.js";
import type { SearchResult, SessionRecord, Stored } from "./types.js";

type Checkpoints = components["schemas"];

type Obj = Record<string, unknown>;
/** A stored message: {id, role, content?, parts?, item?, format?, parent_id, created_at, tokens, ...}. */
export type Message = Obj & { id: string; role: string };
export interface MessagePage {
  messages: Message[];
  total: number;
  total_tokens: number;
  next_cursor: string | null;
  compaction_suggested: boolean;
}
export interface ListMessagesOptions {
  leaf?: string;
  order?: "asc" | "desc";
  limit?: number;
  after?: string;
  before?: string;
  offset?: number;
  compacted?: boolean;
}
/** A compaction: {id, summary, from_id, to_id, created_at}. */
/** A history transaction (POST .../messages/transactions). */
export type MessageTransaction =
  | { operation_id: string; type: "append_items"; messages: Obj[]; part?: number; more?: boolean }
  | { operation_id: string; type: "replace_suffix"; expected_suffix: Obj[]; messages: Obj[] }
  | { operation_id: string; type: "replace_function_call"; call_id: string; message: Obj }
  | { operation_id: string; type: "replace_function_call"; replacements: { call_id: string; message: Obj }[] }
  | { operation_id: string; type: "replace_history"; messages: Obj[]; expected_leaf?: string };
/**
 * What a transaction wrote; `applied: false` for a repeat of its operation
 * id, and for a part of an append_items sent in parts that is staged, not
 * yet visible (`staged`: the messages staged so far, `messages` empty).
 */
export type MessageTransactionResult = { operation_id: string; applied: boolean; messages: Message[]; staged?: number };
export type Compaction = { id: string; summary: string; from_id: string; to_id: string; created_at: string };
/** An ADK session page: state, times and event_count on the first page; events oldest first. */
export type AdkSession = {
  id: string;
  app_name: string;
  user_id: string;
  /** The sidecar session holding it: an ADK session is keyed by (app, user, session). */
  sidecar_session_id: string;
  state?: Obj;
  last_update_time?: number;
  created_at?: number;
  event_count?: number;
  events: Obj[];
  next_cursor: string | null;
};
/** listAdkSessions' answer: ADK's ListSessionsResponse in snake_case. */
export type AdkSessionList = {
  sessions: { id: string; app_name: string; user_id: string; sidecar_session_id: string; last_update_time: number }[];
  page: number;
  limit: number;
  total_items: number;
  total_pages: number;
};
/** listAdkAppSessions' answer: a page of an app's sessions of every user; next_cursor continues a window past 1 000. */
export type AdkAppSessionList = AdkSessionList & { next_cursor: string | null };
/** A context block: {label, description?, content, max_tokens?, writable, position, tokens, scope?}. */
export type Block = Obj & { label: string; content: string };

const enc = encodeURIComponent;

function qs(query: Record<string, string | number | boolean | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : "";
}

/** A client of one sidecar, e.g. `new Sidecar("http://127.0.0.1:7480")`. */
export class Sidecar extends SidecarCore {
  private sessionPath(u: string, s: string, ...more: string[]): string {
    ids(u, s, ...more);
    return [`/v1/users/${enc(u)}/sessions/${enc(s)}`, ...more.map(enc)].join("/");
  }
  private userPath(u: string, ...more: string[]): string {
    ids(u, ...more);
    return [`/v1/users/${enc(u)}`, ...more.map(enc)].join("/");
  }

  // -- events and abort --------------------------------------------------------

  /** getSessionEvents: the session's event stream, reconnecting with Last-Event-ID; ends after `deleted` or when signal aborts. */
  getSessionEvents(userId: string, sessionId: string, opts: { lastEventId?: string; signal?: AbortSignal } = {}): AsyncGenerator<SidecarEvent> {
    return eventStream(this, this.sessionPath(userId, sessionId, "events"), opts);
  }
  /** getSessionEvents, by its short name. */
  events(userId: string, sessionId: string, opts: { lastEventId?: string; signal?: AbortSignal } = {}): AsyncGenerator<SidecarEvent> {
    return this.getSessionEvents(userId, sessionId, opts);
  }
  /** getUserEvents: the user's event stream (user-level changes). */
  getUserEvents(userId: string, opts: { lastEventId?: string; signal?: AbortSignal } = {}): AsyncGenerator<SidecarEvent> {
    return eventStream(this, this.userPath(userId, "events"), opts);
  }
  /** publishSessionEvent: a custom event (`x-<name>`) on the session's stream. */
  publishSessionEvent(userId: string, sessionId: string, event: string, data: unknown): Promise<{ id: string }> {
    return this.raw(false, "POST", this.sessionPath(userId, sessionId, "events"), { event, data });
  }
  /** requestAbort: every write answer of the session carries Sidecar-Abort-Requested until it is cleared. */
  requestAbort(userId: string, sessionId: string): Promise<Obj> {
    return this.raw(true, "POST", this.sessionPath(userId, sessionId, "abort"));
  }
  /** clearAbort: withdraws the abort request. */
  async clearAbort(userId: string, sessionId: string): Promise<void> {
    await this.raw(true, "DELETE", this.sessionPath(userId, sessionId, "abort"));
  }

  // -- messages ------------------------------------------------------------------

  /** appendMessages: chained in order, all or nothing; each gets a client id unless it has one, so a retry stores them once. */
  async appendMessages(userId: string, sessionId: string, messages: Obj[], opts: { ifLeaf?: string } = {}): Promise<Message[]> {
    const batch = messages.map((m) => ({ ...m, id: (m.id as string | undefined) || randomUUID() }));
    const headers: Record<string, string> = { "Idempotency-Key": randomUUID() };
    if (opts.ifLeaf) headers["If-Match"] = `"${opts.ifLeaf}"`;
    const out = await this.raw<{ messages?: Message[] }>(true, "POST", this.sessionPath(userId, sessionId, "messages"), { messages: batch }, headers);
    return out.messages ?? [out as Message];
  }
  /** appendMessages with one message; `created` is false when its id was already stored with the same fields. */
  async appendMessage(userId: string, sessionId: string, message: Obj): Promise<Stored<Message>> {
    const body = { ...message, id: (message.id as string | undefined) || randomUUID() };
    const { data, response } = await this.rawSend<Message>(true, "POST", this.sessionPath(userId, sessionId, "messages"), body, {
      "Idempotency-Key": randomUUID(),
    });
    return stored(data, response);
  }
  listMessages(userId: string, sessionId: string, opts: ListMessagesOptions = {}): Promise<MessagePage> {
    return this.raw(true, "GET", this.sessionPath(userId, sessionId, "messages") + qs({ ...opts }));
  }
  getMessage(userId: string, sessionId: string, messageId: string): Promise<Message> {
    return this.raw(true, "GET", this.sessionPath(userId, sessionId, "messages", messageId));
  }
  /** putMessage: create with that id, or replace its content fields in place; `created` tells which. */
  async putMessage(userId: string, sessionId: string, messageId: string, message: Obj): Promise<Stored<Message>> {
    const { data, response } = await this.rawSend<Message>(true, "PUT", this.sessionPath(userId, sessionId, "messages", messageId), message);
    return stored(data, response);
  }
  patchMessage(userId: string, sessionId: string, messageId: string, patch: Obj): Promise<Message> {
    return this.raw(true, "PATCH", this.sessionPath(userId, sessionId, "messages", messageId), patch);
  }
  /** deleteMessage: a leaf, or with subtree the message and its descendants (else 409 has_children). */
  async deleteMessage(userId: string, sessionId: string, messageId: string, opts: { subtree?: boolean } = {}): Promise<void> {
    await this.raw(false, "DELETE", this.sessionPath(userId, sessionId, "messages", messageId) + qs({ subtree: opts.subtree || undefined }));
  }
  listChildren(userId: string, sessionId: string, messageId: string, limit?: number): Promise<{ messages: Message[] }> {
    return this.raw(true, "GET", this.sessionPath(userId, sessionId, "messages", messageId, "children") + qs({ limit }));
  }
  /** searchUser: the user's messages across all of their sessions matching q, best first (BM25 over stemmed words). */
  searchUser(userId: string, q: string, limit?: number): Promise<{ results: SearchResult[] }> {
    return this.raw(true, "GET", this.userPath(userId, "search") + qs({ q, limit }));
  }
  /** The session's messages matching q, ranked by relevance (searchEntries with rank=relevance). */
  searchRelevant(userId: string, sessionId: string, q: string, limit?: number): Promise<{ results: SearchResult[] }> {
    return this.raw(true, "GET", this.sessionPath(userId, sessionId, "search") + qs({ q, limit, rank: "relevance" }));
  }
  /** popMessage: removes the latest leaf and returns it (404 when none). Never retried. */
  popMessage(userId: string, sessionId: string): Promise<Message> {
    return this.raw(false, "POST", this.sessionPath(userId, sessionId, "messages", "pop"));
  }
  /**
   * applyMessageTransaction: one atomic history transaction on the latest
   * path (append_items, replace_suffix, replace_function_call,
   * replace_history), idempotent by `operation_id`: a repeat answers the
   * first result (`applied: false`), so it is retried on outages. An
   * append_items may come in parts (`part` 0, 1, ... in order, `more` on
   * every part but the last; each at most 100 messages and 256 KiB of
   * them): staged until the last part, then visible at once; 409
   * `part_missing` when the staged parts were lost (send again from part 0).
   */
  applyMessageTransaction(userId: string, sessionId: string, transaction: MessageTransaction): Promise<MessageTransactionResult> {
    return this.raw(true, "POST", this.sessionPath(userId, sessionId, "messages", "transactions"), transaction);
  }
  /** clearMessages: every message and compaction; the record, usage and Q&A entries stay. */
  async clearMessages(userId: string, sessionId: string): Promise<void> {
    await this.raw(true, "DELETE", this.sessionPath(userId, sessionId, "messages"));
  }

  /** createCompaction: reads then show one `compaction:<id>` message for the range. Never retried. */
  createCompaction(userId: string, sessionId: string, body: { summary: string; from_id: string; to_id: string }): Promise<Compaction> {
    return this.raw(false, "POST", this.sessionPath(userId, sessionId, "compactions"), body);
  }
  listCompactions(userId: string, sessionId: string): Promise<{ compactions: Compaction[] }> {
    return this.raw(true, "GET", this.sessionPath(userId, sessionId, "compactions"));
  }
  /** forkSession: a new session holding the path root..at; carries an Idempotency-Key (a UUID unless given). */
  async forkSession(
    userId: string,
    sessionId: string,
    body: { at: string; session_id?: string; title?: string },
    opts: { idempotencyKey?: string } = {},
  ): Promise<Stored<SessionRecord>> {
    const headers = { "Idempotency-Key": opts.idempotencyKey || randomUUID() };
    const { data, response } = await this.rawSend<SessionRecord>(true, "POST", this.sessionPath(userId, sessionId, "fork"), body, headers);
    return stored(data, response);
  }
  /** splitSession: ends this session (end_reason split) and answers its continuation's record; retry-safe like fork. */
  async splitSession(
    userId: string,
    sessionId: string,
    body: { summary: string; session_id?: string; title?: string },
    opts: { idempotencyKey?: string } = {},
  ): Promise<Stored<SessionRecord>> {
    const headers = { "Idempotency-Key": opts.idempotencyKey || randomUUID() };
    const { data, response } = await this.rawSend<SessionRecord>(true, "POST", this.sessionPath(userId, sessionId, "split"), body, headers);
    return stored(data, response);
  }

  // -- blocks, system prompt, tools ------------------------------------------------

  listUserBlocks(userId: string): Promise<{ blocks: Block[] }> {
    return this.raw(true, "GET", this.userPath(userId, "blocks"));
  }
  getUserBlock(userId: string, label: string): Promise<Block> {
    return this.raw(true, "GET", this.userPath(userId, "blocks", label));
  }
  async putUserBlock(userId: string, label: string, block: Obj & { content: string }): Promise<Stored<Block>> {
    const { data, response } = await this.rawSend<Block>(true, "PUT", this.userPath(userId, "blocks", label), block);
    return stored(data, response);
  }
  async deleteUserBlock(userId: string, label: string): Promise<void> {
    await this.raw(false, "DELETE", this.userPath(userId, "blocks", label));
  }
  /** appendUserBlock: never retried (a repeat would append twice). */
  appendUserBlock(userId: string, label: string, content: string): Promise<Block> {
    return this.raw(false, "POST", this.userPath(userId, "blocks", label, "append"), { content });
  }
  listSessionBlocks(userId: string, sessionId: string): Promise<{ blocks: Block[] }> {
    return this.raw(true, "GET", this.sessionPath(userId, sessionId, "blocks"));
  }
  getSessionBlock(userId: string, sessionId: string, label: string): Promise<Block> {
    return this.raw(true, "GET", this.sessionPath(userId, sessionId, "blocks", label));
  }
  async putSessionBlock(userId: string, sessionId: string, label: string, block: Obj & { content: string }): Promise<Stored<Block>> {
    const { data, response } = await this.rawSend<Block>(true, "PUT", this.sessionPath(userId, sessionId, "blocks", label), block);
    return stored(data, response);
  }
  async deleteSessionBlock(userId: string, sessionId: string, label: string): Promise<void> {
    await this.raw(false, "DELETE", this.sessionPath(userId, sessionId, "blocks", label));
  }
  appendSessionBlock(userId: string, sessionId: string, label: string, content: string): Promise<Block> {
    return this.raw(false, "POST", this.sessionPath(userId, sessionId, "blocks", label, "append"), { content });
  }
  /** getSystemPrompt: {prompt, tokens, frozen_at}; frozen keeps the one frozen at the first such call. */
  getSystemPrompt(userId: string, sessionId: string, opts: { frozen?: boolean } = {}): Promise<{ prompt: string; tokens: number; frozen_at: string | null }> {
    return this.raw(true, "GET", this.sessionPath(userId, sessionId, "system-prompt") + qs({ format: "json", frozen: opts.frozen || undefined }));
  }
  refreshSystemPrompt(userId: string, sessionId: string): Promise<{ prompt: string; tokens: number; frozen_at: string | null }> {
    return this.raw(true, "POST", this.sessionPath(userId, sessionId, "system-prompt", "refresh") + qs({ format: "json" }));
  }
  listTools(userId: string, sessionId: string, format?: "openai" | "anthropic"): Promise<{ tools: Obj[] }> {
    return this.raw(true, "GET", this.sessionPath(userId, sessionId, "tools") + qs({ format }));
  }
  /** callTool: {result, is_error}; retried only with a toolCallId (a repeat answers the first result). */
  callTool(userId: string, sessionId: string, name: string, args: Obj | string, toolCallId?: string): Promise<{ result: string; is_error: boolean }> {
    const body = toolCallId ? { arguments: args, tool_call_id: toolCallId } : { arguments: args };
    return this.raw(Boolean(toolCallId), "POST", this.sessionPath(userId, sessionId, "tools", name), body);
  }

  // -- LangGraph checkpoints (the saver is @agentsidecar/client/langgraph) --

  /** putCheckpoint: one checkpoint of a thread (the session), with its changed channel values. */
  putCheckpoint(userId: string, sessionId: string, body: Checkpoints["PutCheckpointRequest"]): Promise<Checkpoints["CheckpointRef"]> {
    return this.raw(true, "POST", this.sessionPath(userId, sessionId, "checkpoints"), body);
  }
  /** putCheckpointWrites: a task's pending writes (a retry stores each once). */
  putCheckpointWrites(userId: string, sessionId: string, body: Checkpoints["PutCheckpointWritesRequest"]): Promise<Checkpoints["CheckpointWritesStored"]> {
    return this.raw(true, "POST", this.sessionPath(userId, sessionId, "checkpoints", "writes"), body);
  }
  /** getCheckpointTuple: by id, or the namespace's newest; 404 (SidecarError) when none. */
  getCheckpointTuple(userId: string, sessionId: string, opts: { checkpoint_ns?: string; checkpoint_id?: string } = {}): Promise<Checkpoints["CheckpointTuple"]> {
    return this.raw(true, "GET", this.sessionPath(userId, sessionId, "checkpoints", "tuple") + qs(opts));
  }
  /** listCheckpoints: a page, newest id first; next_before continues it. filter: metadata values. */
  listCheckpoints(
    userId: string,
    sessionId: string,
    opts: { checkpoint_ns?: string; before?: string; limit?: number; filter?: Record<string, unknown> } = {},
  ): Promise<Checkpoints["CheckpointPage"]> {
    const filter = opts.filter && Object.keys(opts.filter).length > 0 ? JSON.stringify(opts.filter) : undefined;
    return this.raw(true, "GET", this.sessionPath(userId, sessionId, "checkpoints") + qs({ ...opts, filter }));
  }

  // -- Google ADK sessions (module adk; ./adk's SidecarSessionService uses these) --

  private adkPath(app: string, u: string, ...more: string[]): string {
    ids(app, u, ...more);
    return [`/v1/adk/apps/${enc(app)}/users/${enc(u)}/sessions`, ...more.map(enc)].join("/");
  }
  /** createAdkSession: {session_id?, state?} → the session (409 session_exists for an id in use). */
  createAdkSession(appName: string, userId: string, body: { session_id?: string; state?: Obj } = {}): Promise<AdkSession> {
    return this.raw(false, "POST", this.adkPath(appName, userId), body);
  }
  /** listAdkSessions: the user's sessions of the app, ADK's paging and order. */
  listAdkSessions(appName: string, userId: string, opts: { limit?: number; offset?: number; page?: number; order?: "asc" | "desc" } = {}): Promise<AdkSessionList> {
    return this.raw(true, "GET", this.adkPath(appName, userId) + qs(opts));
  }
  /** listAdkAppSessions: the app's sessions of every user (ADK's listSessions without a userId); pass next_cursor alone as `cursor` for the rest. */
  listAdkAppSessions(
    appName: string,
    opts: { limit?: number; offset?: number; page?: number; order?: "asc" | "desc"; cursor?: string } = {},
  ): Promise<AdkAppSessionList> {
    ids(appName);
    return this.raw(true, "GET", `/v1/adk/apps/${enc(appName)}/sessions` + qs(opts));
  }
  /** getAdkSession: a page of the session (state on the first); follow next_cursor for older events. */
  getAdkSession(
    appName: string,
    userId: string,
    sessionId: string,
    opts: { num_recent_events?: number; after_timestamp?: number; limit?: number; cursor?: string } = {},
  ): Promise<AdkSession> {
    return this.raw(true, "GET", this.adkPath(appName, userId, sessionId) + qs(opts));
  }
  /** deleteAdkSession: deletes the whole sidecar session (404 when the app has no such session). */
  async deleteAdkSession(appName: string, userId: string, sessionId: string): Promise<void> {
    await this.raw(false, "DELETE", this.adkPath(appName, userId, sessionId));
  }
  /** appendAdkEvent: the event and its state delta in one script; 409 stale_session for a stale copy (nothing stored). */
  appendAdkEvent(
    appName: string,
    userId: string,
    sessionId: string,
    body: { event: Obj; last_update_time: number; state_delta?: Obj },
  ): Promise<{ index: number; replaced: boolean; last_update_time: number }> {
    return this.raw(false, "POST", this.adkPath(appName, userId, sessionId, "events"), body);
  }
}
