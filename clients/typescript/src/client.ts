/**
 * The Sidecar class: one method per operation of openapi/openapi.json,
 * named after its operationId, over openapi-fetch with the generated types.
 */
import { randomUUID } from "node:crypto";
import createClient, { type Client } from "openapi-fetch";

import { BadID, SidecarError, errorFrom } from "./errors.js";
import { type LockOptions, Lock } from "./lock.js";
import type { paths } from "./schema.js";
import type * as T from "./types.js";

export const DEFAULT_USER_AGENT = "agentsidecar-typescript-client";

export interface SidecarOptions {
  /** SIDECAR_API_TOKEN, sent as a bearer token; undefined or "" sends none. */
  token?: string;
  /** How often a call that is safe to repeat is retried after a network error or a 503 (default 2). */
  retries?: number;
  /** A fetch to use instead of globalThis.fetch (instrumentation, tests). */
  fetch?: (input: Request) => Promise<Response>;
  userAgent?: string;
}

type Answer = { data?: unknown; error?: unknown; response: Response };

/** Throws BadID for ids no URL path can carry. */
export function ids(...xs: string[]): void {
  for (const x of xs) {
    if (typeof x !== "string" || x === "" || x === "." || x === "..") {
      throw new BadID(`id ${JSON.stringify(x)} cannot be sent in a URL path`);
    }
  }
}

export function stored<V extends object>(data: unknown, response: Response): T.Stored<V> {
  return Object.defineProperty(data as V, "created", { value: response.status === 201, enumerable: false }) as T.Stored<V>;
}

function listQuery(o: T.ListSessionsOptions = {}) {
  const q: Record<string, string | number> = {};
  if (o.status) q.status = o.status;
  if (o.limit !== undefined) q.limit = o.limit;
  if (o.cursor) q.cursor = o.cursor;
  for (const [k, v] of Object.entries(o.metadata ?? {})) q[`metadata.${k}`] = v;
  return q as { status?: T.SessionStatus; limit?: number; cursor?: string };
}

/** The calls of the operations whose types are generated (src/schema.ts); Sidecar adds the rest. */
export class SidecarCore {
  /** The openapi-fetch client, for calls the wrapper does not cover. */
  readonly api: Client<paths>;
  readonly baseUrl: string;
  readonly headers: Record<string, string>;
  private readonly retries: number;
  private readonly fetchFn: (input: Request) => Promise<Response>;

  /** Throws TypeError for a base URL that is not http(s)://host[:port] ("localhost:7480" lacks its scheme). */
  constructor(baseUrl = "http://127.0.0.1:7480", options: SidecarOptions = {}) {
    let u: URL | undefined;
    try {
      u = new URL(baseUrl);
    } catch {
      u = undefined;
    }
    if (!u || (u.protocol !== "http:" && u.protocol !== "https:") || !u.hostname) {
      throw new TypeError(`base URL ${JSON.stringify(baseUrl)}: want http://host:port`);
    }
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.headers = { "User-Agent": options.userAgent ?? DEFAULT_USER_AGENT, Accept: "application/json" };
    if (options.token) this.headers.Authorization = `Bearer ${options.token}`;
    this.retries = options.retries ?? 2;
    this.fetchFn = options.fetch ?? ((r: Request) => globalThis.fetch(r));
    this.api = createClient<paths>({ baseUrl: this.baseUrl, headers: this.headers, fetch: this.fetchFn });
  }

  /** Sends f (again, when safe) and returns its 2xx answer; else throws SidecarError. */
  protected async send<V>(safe: boolean, f: () => Promise<Answer>): Promise<{ data: V; response: Response }> {
    for (let attempt = 0; ; attempt++) {
      let a: Answer;
      try {
        a = await f();
      } catch (e) {
        if (!safe || attempt >= this.retries || !(e instanceof TypeError)) throw e;
        await sleep(backoff(attempt));
        continue;
      }
      if (a.response.ok) return { data: a.data as V, response: a.response };
      const err = await errorFrom(a.response, a.error);
      if (a.response.status !== 503 || !safe || attempt >= this.retries) throw err;
      await sleep(err.retryAfter !== undefined ? Math.min(err.retryAfter, 5) * 1000 : backoff(attempt));
    }
  }

  protected async data<V>(safe: boolean, f: () => Promise<Answer>): Promise<V> {
    return (await this.send<V>(safe, f)).data;
  }

  // -- Q&A entries --------------------------------------------------------

  /** appendEntry. Without qa_id the client picks a UUID, so a retry stores the entry once. */
  async appendEntry(userId: string, sessionId: string, body: T.AppendEntryRequest): Promise<T.Stored<T.SessionQAEntry>> {
    ids(userId, sessionId);
    const b = { ...body, qa_id: body.qa_id || randomUUID() };
    const p = { path: { user_id: userId, session_id: sessionId } };
    const { data, response } = await this.send<T.SessionQAEntry>(true, () =>
      this.api.POST("/v1/users/{user_id}/sessions/{session_id}/entries", { params: p, body: b }),
    );
    return stored(data, response);
  }
  /** listEntries: the newest lastN (default 10), oldest first. */
  listEntries(userId: string, sessionId: string, lastN?: number): Promise<T.SessionQAEntry[]> {
    ids(userId, sessionId);
    const params = { path: { user_id: userId, session_id: sessionId }, query: { last_n: lastN } };
    return this.data(true, () => this.api.GET("/v1/users/{user_id}/sessions/{session_id}/entries", { params }));
  }
  getEntry(userId: string, sessionId: string, qaId: string): Promise<T.SessionQAEntry> {
    ids(userId, sessionId, qaId);
    const params = { path: { user_id: userId, session_id: sessionId, qa_id: qaId } };
    return this.data(true, () => this.api.GET("/v1/users/{user_id}/sessions/{session_id}/entries/{qa_id}", { params }));
  }
  /** updateEntry: the fields given are set (null clears); memify_metadata merges key-wise. */
  updateEntry(userId: string, sessionId: string, qaId: string, body: T.UpdateEntryRequest): Promise<T.SessionQAEntry> {
    ids(userId, sessionId, qaId);
    const params = { path: { user_id: userId, session_id: sessionId, qa_id: qaId } };
    return this.data(true, () => this.api.PATCH("/v1/users/{user_id}/sessions/{session_id}/entries/{qa_id}", { params, body }));
  }
  async deleteEntry(userId: string, sessionId: string, qaId: string): Promise<void> {
    ids(userId, sessionId, qaId);
    const params = { path: { user_id: userId, session_id: sessionId, qa_id: qaId } };
    await this.send(false, () => this.api.DELETE("/v1/users/{user_id}/sessions/{session_id}/entries/{qa_id}", { params }));
  }
  setFeedback(userId: string, sessionId: string, qaId: string, body: T.FeedbackRequest): Promise<T.SessionQAEntry> {
    ids(userId, sessionId, qaId);
    const params = { path: { user_id: userId, session_id: sessionId, qa_id: qaId } };
    return this.data(true, () => this.api.PUT("/v1/users/{user_id}/sessions/{session_id}/entries/{qa_id}/feedback", { params, body }));
  }
  clearFeedback(userId: string, sessionId: string, qaId: string): Promise<T.SessionQAEntry> {
    ids(userId, sessionId, qaId);
    const params = { path: { user_id: userId, session_id: sessionId, qa_id: qaId } };
    return this.data(true, () => this.api.DELETE("/v1/users/{user_id}/sessions/{session_id}/entries/{qa_id}/feedback", { params }));
  }
  searchEntries(userId: string, sessionId: string, q: string, limit?: number): Promise<T.SessionQAEntry[]> {
    ids(userId, sessionId);
    const params = { path: { user_id: userId, session_id: sessionId }, query: { q, limit } };
    return this.data(true, () => this.api.GET("/v1/users/{user_id}/sessions/{session_id}/search", { params }));
  }
  async deleteSession(userId: string, sessionId: string): Promise<void> {
    ids(userId, sessionId);
    const params = { path: { user_id: userId, session_id: sessionId } };
    await this.send(false, () => this.api.DELETE("/v1/users/{user_id}/sessions/{session_id}", { params }));
  }

  // -- traces and context -------------------------------------------------

  appendTrace(userId: string, sessionId: string, body: T.AppendTraceRequest): Promise<T.AgentTrace> {
    ids(userId, sessionId);
    const params = { path: { user_id: userId, session_id: sessionId } };
    return this.data(false, () => this.api.POST("/v1/users/{user_id}/sessions/{session_id}/traces", { params, body }));
  }
  listTraces(userId: string, sessionId: string, lastN?: number): Promise<T.AgentTrace[]> {
    ids(userId, sessionId);
    const params = { path: { user_id: userId, session_id: sessionId }, query: { last_n: lastN } };
    return this.data(true, () => this.api.GET("/v1/users/{user_id}/sessions/{session_id}/traces", { params }));
  }
  /** appendContext: without an id the client picks a UUID, so a retry stores it once. */
  async appendContext(userId: string, sessionId: string, entry: Record<string, unknown>): Promise<T.Stored<T.ContextEntry>> {
    ids(userId, sessionId);
    const body = { ...entry, id: (entry.id as string | undefined) || randomUUID() };
    const params = { path: { user_id: userId, session_id: sessionId } };
    const { data, response } = await this.send<T.ContextEntry>(true, () =>
      this.api.POST("/v1/users/{user_id}/sessions/{session_id}/context", { params, body }),
    );
    return stored(data, response);
  }
  listContext(userId: string, sessionId: string): Promise<T.ContextEntry[]> {
    ids(userId, sessionId);
    const params = { path: { user_id: userId, session_id: sessionId } };
    return this.data(true, () => this.api.GET("/v1/users/{user_id}/sessions/{session_id}/context", { params }));
  }
  updateContext(userId: string, sessionId: string, id: string, patch: Record<string, unknown>): Promise<T.ContextEntry> {
    ids(userId, sessionId, id);
    const params = { path: { user_id: userId, session_id: sessionId, id } };
    return this.data(true, () => this.api.PATCH("/v1/users/{user_id}/sessions/{session_id}/context/{id}", { params, body: patch as never }));
  }
  async deleteContext(userId: string, sessionId: string, id: string): Promise<void> {
    ids(userId, sessionId, id);
    const params = { path: { user_id: userId, session_id: sessionId, id } };
    await this.send(false, () => this.api.DELETE("/v1/users/{user_id}/sessions/{session_id}/context/{id}", { params }));
  }

  // -- TTL -------------------------------------------------------------------

  getSessionTTL(userId: string, sessionId: string): Promise<T.TTL> {
    ids(userId, sessionId);
    const params = { path: { user_id: userId, session_id: sessionId } };
    return this.data(true, () => this.api.GET("/v1/users/{user_id}/sessions/{session_id}/ttl", { params }));
  }
  /** setSessionTTL: seconds on every key of the session; 0 = never expires (answered as -1). */
  setSessionTTL(userId: string, sessionId: string, ttlSeconds: number): Promise<T.TTL> {
    ids(userId, sessionId);
    const params = { path: { user_id: userId, session_id: sessionId } };
    return this.data(true, () =>
      this.api.PUT("/v1/users/{user_id}/sessions/{session_id}/ttl", { params, body: { ttl_seconds: ttlSeconds } }),
    );
  }

  // -- usage and lifecycle -----------------------------------------------------

  /** recordUsage: every post carries an Idempotency-Key (a UUID unless given), so a retry counts once. */
  async recordUsage(
    userId: string,
    sessionId: string,
    body: T.UsageRequest,
    opts: { idempotencyKey?: string } = {},
  ): Promise<T.Stored<T.UsageResult>> {
    ids(userId, sessionId);
    const key = opts.idempotencyKey || body.request_id || randomUUID();
    const params = { path: { user_id: userId, session_id: sessionId }, header: { "Idempotency-Key": key } };
    const { data, response } = await this.send<T.UsageResult>(true, () =>
      this.api.POST("/v1/users/{user_id}/sessions/{session_id}/usage", { params, body }),
    );
    return stored(data, response);
  }
  getSession(userId: string, sessionId: string): Promise<T.SessionRecord> {
    ids(userId, sessionId);
    const params = { path: { user_id: userId, session_id: sessionId } };
    return this.data(true, () => this.api.GET("/v1/users/{user_id}/sessions/{session_id}", { params }));
  }
  completeSession(userId: string, sessionId: string, summary?: string): Promise<T.SessionRecord> {
    ids(userId, sessionId);
    const params = { path: { user_id: userId, session_id: sessionId } };
    const body = summary === undefined ? {} : { summary };
    return this.data(true, () => this.api.POST("/v1/users/{user_id}/sessions/{session_id}/complete", { params, body }));
  }
  failSession(userId: string, sessionId: string, summary?: string): Promise<T.SessionRecord> {
    ids(userId, sessionId);
    const params = { path: { user_id: userId, session_id: sessionId } };
    const body = summary === undefined ? {} : { summary };
    return this.data(true, () => this.api.POST("/v1/users/{user_id}/sessions/{session_id}/fail", { params, body }));
  }
  listUserSessions(userId: string, opts?: T.ListSessionsOptions): Promise<T.SessionList> {
    ids(userId);
    const params = { path: { user_id: userId }, query: listQuery(opts) };
    return this.data(true, () => this.api.GET("/v1/users/{user_id}/sessions", { params }));
  }
  listSessions(opts?: T.ListSessionsOptions): Promise<T.SessionList> {
    return this.data(true, () => this.api.GET("/v1/sessions", { params: { query: listQuery(opts) } }));
  }
  /** Every session of the user, following next_cursor. */
  async *allUserSessions(userId: string, opts: T.ListSessionsOptions = {}): AsyncGenerator<T.SessionRecord> {
    for (let o = opts; ; ) {
      const page = await this.listUserSessions(userId, o);
      yield* page.sessions;
      if (!page.next_cursor) return;
      o = { ...o, cursor: page.next_cursor };
    }
  }
  /** Every session of every user, following next_cursor. */
  async *allSessions(opts: T.ListSessionsOptions = {}): AsyncGenerator<T.SessionRecord> {
    for (let o = opts; ; ) {
      const page = await this.listSessions(o);
      yield* page.sessions;
      if (!page.next_cursor) return;
      o = { ...o, cursor: page.next_cursor };
    }
  }
  getSessionStats(): Promise<T.SessionStats> {
    return this.data(true, () => this.api.GET("/v1/sessions/stats"));
  }
  getCostByModel(days?: number): Promise<T.CostByModel> {
    return this.data(true, () => this.api.GET("/v1/sessions/cost-by-model", { params: { query: { days } } }));
  }

  // -- registry ----------------------------------------------------------------

  /** createSession: carries an Idempotency-Key (a UUID unless given), so a retry answers the record with created false. */
  async createSession(
    userId: string,
    body: T.CreateSessionRequest = {},
    opts: { idempotencyKey?: string } = {},
  ): Promise<T.Stored<T.SessionRecord>> {
    ids(userId);
    const params = { path: { user_id: userId }, header: { "Idempotency-Key": opts.idempotencyKey || randomUUID() } };
    const { data, response } = await this.send<T.SessionRecord>(true, () =>
      this.api.POST("/v1/users/{user_id}/sessions", { params, body }),
    );
    return stored(data, response);
  }
  updateSession(userId: string, sessionId: string, body: T.UpdateSessionRequest): Promise<T.SessionRecord> {
    ids(userId, sessionId);
    const params = { path: { user_id: userId, session_id: sessionId } };
    return this.data(true, () => this.api.PATCH("/v1/users/{user_id}/sessions/{session_id}", { params, body }));
  }
  async startSession(userId: string, body: T.StartSessionRequest = {}): Promise<T.Stored<T.SessionStart>> {
    ids(userId);
    const params = { path: { user_id: userId } };
    const { data, response } = await this.send<T.SessionStart>(true, () =>
      this.api.POST("/v1/users/{user_id}/active-session", { params, body }),
    );
    return stored(data, response);
  }
  endActiveSession(userId: string, body: T.EndActiveSessionRequest = {}): Promise<T.SessionRecord> {
    ids(userId);
    const params = { path: { user_id: userId } };
    return this.data(false, () => this.api.POST("/v1/users/{user_id}/active-session/end", { params, body }));
  }
  getSessionState(userId: string, sessionId: string): Promise<T.State> {
    ids(userId, sessionId);
    const params = { path: { user_id: userId, session_id: sessionId } };
    return this.data(true, () => this.api.GET("/v1/users/{user_id}/sessions/{session_id}/state", { params }));
  }
  patchSessionState(userId: string, sessionId: string, patch: Record<string, unknown>): Promise<T.State> {
    ids(userId, sessionId);
    const params = { path: { user_id: userId, session_id: sessionId } };
    return this.data(true, () => this.api.PATCH("/v1/users/{user_id}/sessions/{session_id}/state", { params, body: patch as never }));
  }
  getUserState(userId: string): Promise<T.State> {
    ids(userId);
    return this.data(true, () => this.api.GET("/v1/users/{user_id}/state", { params: { path: { user_id: userId } } }));
  }
  patchUserState(userId: string, patch: Record<string, unknown>): Promise<T.State> {
    ids(userId);
    const params = { path: { user_id: userId } };
    return this.data(true, () => this.api.PATCH("/v1/users/{user_id}/state", { params, body: patch as never }));
  }
  /** Erases every key and index member of the user in bounded steps: `{erased: true}` when done, else
   * `{erased: false, remaining}` (the sessions left, an estimate): call again, from any process, until done.
   * Until 30 s after it is done the user's writes are refused (409 `user_erasing`). */
  eraseUser(userId: string): Promise<T.Erasure> {
    ids(userId);
    return this.data(true, () => this.api.DELETE("/v1/users/{user_id}", { params: { path: { user_id: userId } } }));
  }

  // -- locks ---------------------------------------------------------------------

  /** acquireLock: LockHeld when it stayed held for wait_ms. Never retried (a retry could take it twice). */
  acquireLock(name: string, body: T.AcquireLockRequest = {}): Promise<T.LockGrant> {
    ids(name);
    return this.data(false, () => this.api.POST("/v1/locks/{name}", { params: { path: { name } }, body }));
  }
  /** refreshLock: LockLost when the token no longer holds it. */
  refreshLock(name: string, token: string, ttlMs?: number): Promise<T.LockGrant> {
    ids(name);
    const body = ttlMs === undefined ? { token } : { token, ttl_ms: ttlMs };
    return this.data(true, () => this.api.POST("/v1/locks/{name}/refresh", { params: { path: { name } }, body }));
  }
  /** releaseLock: 404 not_held when nobody holds it, 409 not_owner when another token does. */
  async releaseLock(name: string, token: string): Promise<void> {
    ids(name);
    await this.send(false, () => this.api.DELETE("/v1/locks/{name}", { params: { path: { name } }, body: { token } }));
  }
  inspectLock(name: string): Promise<T.LockInfo> {
    ids(name);
    return this.data(true, () => this.api.GET("/v1/locks/{name}", { params: { path: { name } } }));
  }
  /**
   * Holds the lock while fn runs: waits up to `wait` seconds (else LockHeld),
   * refreshes it every ttl/3, releases it after fn, and throws LockLost after
   * fn if it was lost meanwhile (lock.signal aborts at the loss).
   */
  async withLock<R>(name: string, options: LockOptions, fn: (lock: Lock) => Promise<R> | R): Promise<R> {
    const lock = await this.lock(name, options);
    let result: R;
    try {
      result = await fn(lock);
    } catch (e) {
      await lock.release().catch(() => undefined);
      throw e;
    }
    await lock.release();
    return result;
  }
  /** Takes the lock and starts its background refresh; call release() when done. */
  async lock(name: string, options: LockOptions = {}): Promise<Lock> {
    return Lock.acquire(this, name, options);
  }

  /** One call with fetch, for routes the generated types do not know yet. */
  async raw<V>(safe: boolean, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<V> {
    return (await this.rawSend<V>(safe, method, path, body, headers)).data;
  }

  protected rawSend<V>(safe: boolean, method: string, path: string, body?: unknown, extra: Record<string, string> = {}) {
    return this.send<V>(safe, async () => {
      const headers: Record<string, string> = { ...this.headers, ...extra };
      if (body !== undefined) headers["Content-Type"] = "application/json";
      const response = await this.fetchFn(
        new Request(this.baseUrl + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }),
      );
      const text = await response.text();
      let data: unknown;
      try {
        data = text ? JSON.parse(text) : undefined;
      } catch {
        data = text;
      }
      return response.ok ? { data, response } : { error: data, response };
    });
  }

  /** fetch as the client sends it (headers included): for streams. */
  fetch(request: Request): Promise<Response> {
    return this.fetchFn(request);
  }
}

function backoff(attempt: number): number {
  const d = Math.min(100 * 2 ** attempt, 2000);
  return d + Math.random() * (d / 4);
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

export { SidecarError };
