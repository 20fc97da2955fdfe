"""Errors of the agentsidecar client.

Every non-2xx answer of the sidecar is a :class:`SidecarError` carrying the
HTTP ``status`` and the error envelope's ``code`` and ``message``
(``{"error": {"code", "message"}}``). The subclasses name the usual cases so
that ``except NotFound:`` reads well; match on ``code`` for the rest, never
on ``message``.
"""

from typing import Optional

__all__ = [
    "SidecarError",
    "NotFound",
    "Conflict",
    "Unavailable",
    "LockHeld",
    "LockLost",
    "BadID",
]

# The largest message kept from an answer that is not an envelope (a
# proxy's HTML page, say).
_MAX_MESSAGE = 512


class SidecarError(Exception):
    """A non-2xx answer: ``status`` (int), ``code`` (the envelope's
    snake_case code, "" when the body was not an envelope), ``message``
    (human text) and ``retry_after`` (seconds from Retry-After, or None)."""

    def __init__(self, status: int, code: str, message: str, retry_after: Optional[float] = None):
        super().__init__(status, code, message)
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after

    def __str__(self) -> str:
        return "sidecar: %d %s: %s" % (self.status, self.code or "error", self.message)

    @property
    def not_found(self) -> bool:
        """True for 404 (an unknown session, entry, or a lock nobody holds)."""
        return self.status == 404

    @property
    def conflict(self) -> bool:
        """True for 409 (lock_held, lock_lost, not_owner, session_exists, ...)."""
        return self.status == 409

    @property
    def unavailable(self) -> bool:
        """True for 503 (Redis unreachable or slow, overload, shutdown): retry after ``retry_after``."""
        return self.status == 503


class NotFound(SidecarError):
    """404: ``not_found`` (unknown session, entry, context entry) or ``not_held``."""


class Conflict(SidecarError):
    """409: ``session_ended``, ``session_exists``, ``not_owner``, ``lock_key_conflict``, ..."""


class Unavailable(SidecarError):
    """503: ``redis_unavailable``, ``timeout``, ``overloaded``, ``shutting_down``, ``redis_oom``, ..."""


class LockHeld(Conflict):
    """409 ``lock_held``: the lock stayed held for the whole wait."""


class LockLost(Conflict):
    """The lock is no longer ours: 409 ``lock_lost`` on refresh, a refresh
    that could not reach the sidecar before the TTL ran out, or a release
    that found the lock gone (``not_held``) or taken (``not_owner``)."""


class BadID(ValueError):
    """An id no URL path can carry ("", "." or ".."), refused before
    anything is sent. The sidecar checks everything else (400 invalid_id)."""


def error_from(status: int, body: bytes, retry_after: Optional[str]) -> SidecarError:
    """The SidecarError (subclass) of one non-2xx answer."""
    import json

    code, message = "", ""
    try:
        env = json.loads(body.decode("utf-8"))
        err = env.get("error") if isinstance(env, dict) else None
        if isinstance(err, dict) and isinstance(err.get("code"), str) and err["code"]:
            code, message = err["code"], str(err.get("message", ""))
    except (ValueError, UnicodeDecodeError):
        pass
    if not code:
        message = body.decode("utf-8", "replace").strip()
        if len(message) > _MAX_MESSAGE:
            message = message[:_MAX_MESSAGE] + "…"
    ra = _retry_after(retry_after)
    cls = SidecarError
    if code == "lock_held":
        cls = LockHeld
    elif code == "lock_lost":
        cls = LockLost
    elif status == 404:
        cls = NotFound
    elif status == 409:
        cls = Conflict
    elif status == 503:
        cls = Unavailable
    return cls(status, code, message, ra)


def _retry_after(value: Optional[str]) -> Optional[float]:
    if not value:
        return None
    try:
        return max(float(int(value.strip())), 0.0)
    except ValueError:
        pass
    try:
        from email.utils import parsedate_to_datetime
        import datetime

        when = parsedate_to_datetime(value)
        now = datetime.datetime.now(datetime.timezone.utc)
        return max((when - now).total_seconds(), 0.0)
    except (TypeError, ValueError, IndexError):
        return None
