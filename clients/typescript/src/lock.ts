/** The lock helper: a lock held by a background refresh until release(). */
import { LockLost, SidecarError } from "./errors.js";
import type { LockGrant } from "./types.js";

export interface LockOptions {
  /** Lease in seconds (default 30); refreshed every ttl/3. */
  ttl?: number;
  /** Seconds to wait for a held lock (default 10); 0 = fail at once with LockHeld. */
  wait?: number;
  /** Free text shown to inspectors and in conflicts. */
  owner?: string;
}

interface LockCalls {
  acquireLock(name: string, body: { owner?: string; ttl_ms?: number; wait_ms?: number }): Promise<LockGrant>;
  refreshLock(name: string, token: string, ttlMs?: number): Promise<LockGrant>;
  releaseLock(name: string, token: string): Promise<void>;
}

/** A held lock. `fencingToken` is for the protected resource; `signal` aborts when the lock is lost. */
export class Lock {
  readonly name: string;
  readonly token: string;
  readonly fencingToken: number;
  readonly owner: string;
  readonly ttlMs: number;
  private readonly sc: LockCalls;
  private readonly controller = new AbortController();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private inflight: Promise<void> = Promise.resolve();
  private stopped = false;
  private lostError: SidecarError | undefined;

  private constructor(sc: LockCalls, name: string, g: LockGrant) {
    this.sc = sc;
    this.name = name;
    this.token = g.token;
    this.fencingToken = g.fencing_token;
    this.owner = g.owner;
    this.ttlMs = g.ttl_ms;
  }

  static async acquire(sc: LockCalls, name: string, o: LockOptions): Promise<Lock> {
    const ttl = o.ttl ?? 30;
    const wait = o.wait ?? 10;
    if (!(ttl > 0) || !(wait >= 0)) throw new RangeError(`lock ${name}: want ttl > 0 and wait >= 0`);
    const sent = Date.now();
    const g = await sc.acquireLock(name, {
      ...(o.owner ? { owner: o.owner } : {}),
      ttl_ms: Math.max(Math.round(ttl * 1000), 1),
      wait_ms: Math.round(wait * 1000),
    });
    const lock = new Lock(sc, name, g);
    lock.schedule(lock.ttlMs / 3, sent + g.ttl_ms);
    return lock;
  }

  /** Aborted, with a LockLost reason, when the lock is lost. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }
  get lost(): boolean {
    return this.lostError !== undefined;
  }
  /** Throws LockLost if the lock was lost. */
  check(): void {
    if (this.lostError) throw this.lostError;
  }

  private schedule(delay: number, deadline: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.inflight = this.refresh(deadline);
    }, delay);
  }

  private async refresh(deadline: number): Promise<void> {
    const every = this.ttlMs / 3;
    const sent = Date.now();
    try {
      const g = await this.sc.refreshLock(this.name, this.token, this.ttlMs);
      this.schedule(every, sent + g.ttl_ms);
    } catch (e) {
      if (e instanceof LockLost || Date.now() >= deadline) {
        this.lose(e);
        return;
      }
      // Retry soon, well before the deadline.
      const retry = Math.min(every / 4 + Math.random() * (every / 4), (deadline - Date.now()) / 2);
      this.schedule(Math.max(retry, 10), deadline);
    }
  }

  private lose(e: unknown): void {
    if (this.lostError) return;
    this.lostError =
      e instanceof LockLost ? e : new LockLost(409, "lock_lost", `lock ${this.name} was lost: ${e instanceof Error ? e.message : e}`);
    this.controller.abort(this.lostError);
  }

  /** Stops the refresh and frees the lock; throws LockLost if it had been lost. */
  async release(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.timer);
    await this.inflight;
    try {
      await this.sc.releaseLock(this.name, this.token);
    } catch (e) {
      if (e instanceof SidecarError && (e.code === "not_held" || e.code === "not_owner")) this.lose(e);
      else if (!this.lostError) throw e;
    }
    this.check();
  }
}
