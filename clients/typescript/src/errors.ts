/**
 * Errors of the client. Every non-2xx answer is a SidecarError carrying the
 * HTTP status and the error envelope's code and message
 * (`{"error": {"code", "message"}}`); match on `code`, never on `message`.
 */

/** A non-2xx answer of the sidecar. */
export class SidecarError extends Error {
  /** HTTP status. */
  readonly status: number;
  /** The envelope's snake_case code; "" when the body was not an envelope. */
  readonly code: string;
  /** Seconds from Retry-After (sent with 503), or undefined. */
  readonly retryAfter: number | undefined;

  constructor(status: number, code: string, message: string, retryAfter?: number) {
    super(message);
    this.name = new.target.name;
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
  }

  /** 404: an unknown session, entry, or a lock nobody holds. */
  get notFound(): boolean {
    return this.status === 404;
  }
  /** 409: lock_held, lock_lost, not_owner, session_ended, session_exists, ... */
  get conflict(): boolean {
    return this.status === 409;
  }
  /** 503: Redis unreachable or slow, overload: retry after retryAfter. */
  get unavailable(): boolean {
    return this.status === 503;
  }
  override toString(): string {
    return `sidecar: ${this.status} ${this.code || "error"}: ${this.message}`;
  }
}

/** 409 lock_held: the lock stayed held for the whole wait. */
export class LockHeld extends SidecarError {}

/**
 * The lock is no longer ours: 409 lock_lost on refresh, a refresh that could
 * not reach the sidecar before the TTL ran out, or a release that found the
 * lock gone (not_held) or taken (not_owner).
 */
export class LockLost extends SidecarError {}

/** An id no URL path can carry ("", "." or ".."), refused before sending. */
export class BadID extends TypeError {}

const maxMessage = 512;

/** The SidecarError of one non-2xx answer. */
export async function errorFrom(response: Response, body?: unknown): Promise<SidecarError> {
  let code = "";
  let message = "";
  let parsed = body;
  let text = "";
  if (parsed === undefined) {
    text = await response.text().catch(() => "");
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
  }
  const env = (parsed as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
  if (env && typeof env.code === "string" && env.code !== "") {
    code = env.code;
    message = String(env.message ?? "");
  } else {
    message = (text || (typeof parsed === "string" ? parsed : "")).trim();
    if (message.length > maxMessage) message = message.slice(0, maxMessage) + "…";
  }
  const ra = retryAfter(response.headers.get("Retry-After"));
  const Cls = code === "lock_held" ? LockHeld : code === "lock_lost" ? LockLost : SidecarError;
  return new Cls(response.status, code, message, ra);
}

function retryAfter(v: string | null): number | undefined {
  if (!v) return undefined;
  if (/^\s*\d+\s*$/.test(v)) return Number(v);
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : Math.max((t - Date.now()) / 1000, 0);
}
