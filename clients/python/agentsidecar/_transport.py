"""One HTTP/1.1 keep-alive transport shared by every thread of a Sidecar.

Idle connections wait in a small pool; a call takes one (or opens one),
sends, reads the whole answer and gives it back, so any number of threads
can share one Sidecar. A call is retried only when it is safe: the
operation is idempotent, or carries the key that makes the sidecar answer a
repeat with the stored result (a ``qa_id``, an ``Idempotency-Key``, ...).
"""

import http.client
import json
import random
import threading
import time
import urllib.parse
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .errors import BadID, SidecarError, error_from

# Errors of a connection that the server closed while it sat idle: the
# request most likely never arrived.
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)
_CONNECT = (ConnectionRefusedError, OSError)
_NO_BODY = object()


def path(*segments: str) -> str:
    """/v1/<segment>/... with each segment escaped; "", "." and ".." are
    BadID (URL path cleaning would turn the call into another one)."""
    out = ["/v1"]
    for s in segments:
        if not isinstance(s, str) or s in ("", ".", ".."):
            raise BadID("id %r cannot be sent in a URL path" % (s,))
        out.append(urllib.parse.quote(s, safe=""))
    return "/".join(out)


class Answer:
    """A 2xx answer: status, headers and the decoded JSON body (None for 204)."""

    __slots__ = ("status", "headers", "body")

    def __init__(self, status: int, headers: http.client.HTTPMessage, body: Any):
        self.status = status
        self.headers = headers
        self.body = body


def stored(answer: "Answer") -> Any:
    """The answer's JSON object as a types.Stored: ``created`` is True for
    a 201 (stored now), False for a 200 (a safe repeat)."""
    from .types import Stored

    s = Stored(answer.body or {})
    s.created = answer.status == 201
    return s


class Transport:
    def __init__(
        self,
        base_url: str,
        token: Optional[str],
        timeout: float,
        retries: int,
        user_agent: str,
        max_idle: int = 16,
    ):
        u = urllib.parse.urlsplit(base_url.rstrip("/"))
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError("base_url %r: want http://host:port" % (base_url,))
        self.scheme = u.scheme
        self.host = u.hostname
        self.port = u.port or (443 if u.scheme == "https" else 80)
        self.prefix = u.path  # a proxy's path prefix, usually ""
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.user_agent = user_agent
        self._idle: List[http.client.HTTPConnection] = []
        self._max_idle = max_idle
        self._lock = threading.Lock()

    def connection(self, timeout: Optional[float] = None) -> http.client.HTTPConnection:
        """A new connection (not from the pool): for streams."""
        cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        return cls(self.host, self.port, timeout=self.timeout if timeout is None else timeout)

    def _take(self) -> Tuple[http.client.HTTPConnection, bool]:
        with self._lock:
            if self._idle:
                return self._idle.pop(), True
        return self.connection(), False

    def _give(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < self._max_idle:
                self._idle.append(conn)
                return
        conn.close()

    def __del__(self) -> None:
        if hasattr(self, "_lock"):
            self.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for c in idle:
            c.close()

    def headers(self, extra: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
        h = {"Accept": "application/json", "User-Agent": self.user_agent}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        if extra:
            h.update(extra)
        return h

    def call(
        self,
        method: str,
        p: str,
        query: Optional[Sequence[Tuple[str, str]]] = None,
        body: Any = _NO_BODY,
        headers: Optional[Mapping[str, str]] = None,
        safe: bool = False,
        timeout: Optional[float] = None,
    ) -> Answer:
        """Send one call and return its 2xx answer; any other answer raises
        SidecarError. A safe call is retried on a connection failure and on
        503 (after Retry-After), up to ``retries`` times."""
        target = self.prefix + p
        if query:
            target += "?" + urllib.parse.urlencode(list(query))
        h = self.headers(headers)
        data = None
        if body is not _NO_BODY:
            data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
            h["Content-Type"] = "application/json"
        attempt = 0
        while True:
            try:
                status, hdrs, raw = self._once(method, target, data, h, safe, timeout)
            except _CONNECT:
                if not safe or attempt >= self.retries:
                    raise
                self._sleep(attempt, None)
                attempt += 1
                continue
            if 200 <= status <= 299:
                if status == 204 or not raw:
                    return Answer(status, hdrs, None)
                return Answer(status, hdrs, json.loads(raw.decode("utf-8")))
            err = error_from(status, raw, hdrs.get("Retry-After"))
            if status == 503 and safe and attempt < self.retries:
                self._sleep(attempt, err.retry_after)
                attempt += 1
                continue
            raise err

    def _once(self, method, target, data, h, safe, timeout):
        conn, reused = self._take()
        try:
            if conn.sock is None:
                conn.connect()
            conn.sock.settimeout(self.timeout if timeout is None else timeout)
            try:
                conn.request(method, target, body=data, headers=h)
                resp = conn.getresponse()
            except _STALE:
                conn.close()
                if not reused:
                    raise
                # The server closed the idle connection: send again on a
                # fresh one when the call may be repeated.
                if not safe:
                    raise
                conn = self.connection()
                conn.connect()
                conn.sock.settimeout(self.timeout if timeout is None else timeout)
                conn.request(method, target, body=data, headers=h)
                resp = conn.getresponse()
            raw = resp.read()
        except BaseException:
            conn.close()
            raise
        if resp.will_close:
            conn.close()
        else:
            self._give(conn)
        return resp.status, resp.msg, raw

    @staticmethod
    def _sleep(attempt: int, retry_after: Optional[float]) -> None:
        if retry_after is not None:
            delay = min(retry_after, 5.0)
        else:
            delay = min(0.1 * (2 ** attempt), 2.0)
        time.sleep(delay + random.uniform(0, delay / 4))


__all__ = ["Transport", "Answer", "path", "stored", "SidecarError"]
