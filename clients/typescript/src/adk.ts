/**
 * Google ADK's session service over the sidecar: pass it to a Runner,
 * `new Runner({ appName, agent, sessionService: new SidecarSessionService({ baseUrl }) })`,
 * and every process and pod running the agent shares its sessions. An ADK
 * session is keyed by (appName, userId, sessionId), as ADK's own services
 * key it: the sidecar session `<appName>.<sessionId>` of the user (a hash
 * for long or dotted names) in module `adk`
 * (`/v1/adk/apps/{app}/users/{u}/sessions`, the Sidecar's *Adk* calls), so
 * two apps sharing a sidecar never meet on a session id:
 * its events, its state, the `user:` state the user's sessions of the app
 * share and the `app:` state every user of the app shares are kept in
 * Redis; `temp:` keys are never sent.
 *
 * `appendEvent` is one atomic script on the sidecar: the event and its
 * state delta together, refused as a whole (`StaleSessionError`, the
 * sidecar's 409 `stale_session`) when the session was updated after the
 * caller's copy, ADK's stale-session check. `getSession` reads the events
 * a page at a time until it holds what ADK's `numRecentEvents` and
 * `afterTimestamp` pick, so no page size or answer cap shortens it.
 *
 * `@google/adk` 2.x is an optional peer dependency: only this entry point
 * imports it.
 */
import {
  BaseSessionService,
  State,
  type AppendEventRequest,
  type CreateSessionRequest,
  type DeleteSessionRequest,
  type Event,
  type GetSessionRequest,
  type ListSessionsRequest,
  type ListSessionsResponse,
  type Session,
} from "@google/adk";

import { Sidecar, type AdkSession, type AdkSessionList } from "./sidecar.js";
import type { SidecarOptions } from "./client.js";
import { SidecarError } from "./errors.js";

/** How SidecarSessionService reaches the sidecar: a Sidecar, or its address. */
export interface SidecarSessionServiceOptions extends SidecarOptions {
  /** The sidecar's API address (default http://127.0.0.1:7480). */
  baseUrl?: string;
  /** A Sidecar client to use instead of building one from baseUrl and token. */
  sidecar?: Sidecar;
  /** Events per page when reading a session (1-1000, default 1000). */
  pageSize?: number;
}

/** appendEvent refused: the session was updated after the caller's copy (read it again). */
export class StaleSessionError extends Error {
  readonly cause: SidecarError;
  constructor(cause: SidecarError) {
    super(`stale session: ${cause.message}`);
    this.name = "StaleSessionError";
    this.cause = cause;
  }
}

function withoutTemp(state: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (!state) return undefined;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(state)) if (!k.startsWith(State.TEMP_PREFIX)) out[k] = v;
  return out;
}

export class SidecarSessionService extends BaseSessionService {
  readonly sidecar: Sidecar;
  private readonly pageSize: number;

  constructor(options: SidecarSessionServiceOptions | Sidecar = {}) {
    super();
    if (options instanceof Sidecar) {
      this.sidecar = options;
      this.pageSize = 1000;
    } else {
      const { baseUrl, sidecar, pageSize, ...rest } = options;
      this.sidecar = sidecar ?? new Sidecar(baseUrl, rest);
      this.pageSize = pageSize ?? 1000;
    }
  }

  /** ADK's createSession: a sessionId that exists already is an error (the sidecar's 409 session_exists). */
  async createSession({ appName, userId, state, sessionId }: CreateSessionRequest): Promise<Session> {
    const body: { session_id?: string; state?: Record<string, unknown> } = {};
    if (sessionId) body.session_id = sessionId;
    const st = withoutTemp(state);
    if (st) body.state = st;
    try {
      const w = await this.sidecar.createAdkSession(appName, userId, body);
      return this.toSession(w, w.events as unknown as Event[]);
    } catch (e) {
      if (e instanceof SidecarError && e.status === 409 && e.code === "session_exists") {
        throw new Error(`Session with id ${sessionId} already exists.`, { cause: e });
      }
      throw e;
    }
  }

  async getSession({ appName, userId, sessionId, config }: GetSessionRequest): Promise<Session | undefined> {
    const q = {
      limit: this.pageSize,
      num_recent_events: config?.numRecentEvents && config.numRecentEvents > 0 ? config.numRecentEvents : undefined,
      after_timestamp: config?.afterTimestamp || undefined,
    };
    let first: AdkSession;
    try {
      first = await this.sidecar.getAdkSession(appName, userId, sessionId, q);
    } catch (e) {
      if (e instanceof SidecarError && e.status === 404) return undefined;
      throw e;
    }
    // pages come newest first, each oldest first within
    const pages = [first.events];
    for (let cursor = first.next_cursor; cursor; ) {
      const page = await this.sidecar.getAdkSession(appName, userId, sessionId, { ...q, cursor });
      pages.push(page.events);
      cursor = page.next_cursor;
    }
    return this.toSession(first, pages.reverse().flat() as unknown as Event[]);
  }

  /**
   * ADK's listSessions: one user's sessions of the app, or with no userId
   * every user's (the app's index across users, read a page of at most
   * 1 000 at a time: this follows next_cursor until it holds the window
   * asked).
   */
  async listSessions({ appName, userId, limit, offset, page, order }: ListSessionsRequest): Promise<ListSessionsResponse> {
    const q = { limit, offset: offset || undefined, page, order };
    let w: AdkSessionList;
    if (userId === undefined) {
      const first = await this.sidecar.listAdkAppSessions(appName, q);
      w = first;
      for (let cursor = first.next_cursor; cursor; ) {
        const more = await this.sidecar.listAdkAppSessions(appName, { cursor });
        w.sessions.push(...more.sessions);
        cursor = more.next_cursor;
      }
    } else {
      w = await this.sidecar.listAdkSessions(appName, userId, q);
    }
    return {
      sessions: w.sessions.map((x) => ({ id: x.id, appName: x.app_name, userId: x.user_id, state: {}, events: [], lastUpdateTime: x.last_update_time })),
      page: w.page,
      limit: w.limit,
      totalItems: w.total_items,
      totalPages: w.total_pages,
    };
  }

  /** Deletes the whole sidecar session; a missing one is no error (as ADK's services). */
  async deleteSession({ appName, userId, sessionId }: DeleteSessionRequest): Promise<void> {
    try {
      await this.sidecar.deleteAdkSession(appName, userId, sessionId);
    } catch (e) {
      if (!(e instanceof SidecarError && e.status === 404)) throw e;
    }
  }

  /**
   * ADK's appendEvent: the event (without `temp:` keys in its delta) and
   * its state delta stored in one script, then applied to the caller's
   * session as ADK does. A partial event is not stored. Throws
   * StaleSessionError, with nothing stored, when the stored session was
   * updated after `session.lastUpdateTime`.
   */
  override async appendEvent({ session, event }: AppendEventRequest): Promise<Event> {
    if (event.partial) return event;
    const delta = event.actions?.stateDelta ?? {};
    // super trims temp: keys from the event's delta and applies it to the caller's copy
    const last = session.lastUpdateTime;
    const stored = await this.sendEvent(session, event, delta, last);
    const out = await super.appendEvent({ session, event: stored });
    session.lastUpdateTime = out.timestamp;
    return out;
  }

  private async sendEvent(session: Session, event: Event, delta: Record<string, unknown>, last: number): Promise<Event> {
    const stateDelta = withoutTemp(delta) ?? {};
    // the event as ADK stores it: its delta without temp: keys
    const wire = event.actions?.stateDelta ? { ...event, actions: { ...event.actions, stateDelta } } : event;
    try {
      await this.sidecar.appendAdkEvent(session.appName, session.userId, session.id, {
        event: wire as unknown as Record<string, unknown>,
        last_update_time: last,
        state_delta: stateDelta,
      });
    } catch (e) {
      if (e instanceof SidecarError && e.status === 409 && e.code === "stale_session") throw new StaleSessionError(e);
      if (e instanceof SidecarError && e.status === 404) {
        throw new Error(`Session ${session.id} not found for appendEvent (app ${session.appName}, user ${session.userId})`);
      }
      throw e;
    }
    return event;
  }

  private toSession(w: AdkSession, events: Event[]): Session {
    return {
      id: w.id,
      appName: w.app_name,
      userId: w.user_id,
      state: w.state ?? {},
      events,
      lastUpdateTime: w.last_update_time ?? 0,
    };
  }
}
