"""The lock helper: a context manager that holds a sidecar lock, refreshes
it from a background thread and reports its loss."""

import random
import threading
import time
from typing import Any, Optional

from .errors import LockLost, NotFound, SidecarError


class Lock:
    """``with sc.lock("graph_writes", ttl=30, wait=10) as lk:`` — see
    Sidecar.lock. Attributes once held: ``name``, ``token``,
    ``fencing_token`` (pass it to the protected resource), ``owner``,
    ``ttl`` (seconds); ``lost`` is a threading.Event set when the lock is
    lost; ``check()`` raises LockLost then, for long loops."""

    def __init__(self, sidecar: Any, name: str, ttl: float, wait: float, owner: Optional[str]):
        if ttl <= 0 or wait < 0:
            raise ValueError("lock %s: want ttl > 0 and wait >= 0" % name)
        self.name = name
        self.owner = owner
        self.ttl = float(ttl)
        self.wait = float(wait)
        self.token = ""
        self.fencing_token = 0
        self.lost = threading.Event()
        self._sc = sidecar
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._error: Optional[BaseException] = None

    def __enter__(self) -> "Lock":
        sent = time.monotonic()
        grant = self._sc.acquire_lock(
            self.name, owner=self.owner, ttl_ms=max(int(self.ttl * 1000), 1), wait_ms=int(self.wait * 1000)
        )
        self.token = grant["token"]
        self.fencing_token = grant["fencing_token"]
        self.owner = grant.get("owner", self.owner)
        self.ttl = grant["ttl_ms"] / 1000.0
        self._thread = threading.Thread(
            target=self._refresh, args=(sent + self.ttl,), name="agentsidecar-lock-" + self.name, daemon=True
        )
        self._thread.start()
        return self

    def check(self) -> None:
        """Raise LockLost if the lock was lost."""
        if self.lost.is_set():
            raise self._lost_error()

    def _lost_error(self) -> LockLost:
        if isinstance(self._error, LockLost):
            return self._error
        return LockLost(409, "lock_lost", "lock %s was lost: %s" % (self.name, self._error))

    def _refresh(self, deadline: float) -> None:
        every = self.ttl / 3
        delay = every
        while not self._stop.wait(delay):
            sent = time.monotonic()
            try:
                grant = self._sc.refresh_lock(self.name, self.token, ttl_ms=int(self.ttl * 1000))
            except LockLost as e:
                self._lose(e)
                return
            except (SidecarError, OSError) as e:
                if time.monotonic() >= deadline:
                    self._lose(e)
                    return
                # Retry soon, well before the deadline.
                delay = max(min(every / 4 + random.uniform(0, every / 4), (deadline - time.monotonic()) / 2), 0.01)
                continue
            deadline = sent + grant["ttl_ms"] / 1000.0
            delay = every

    def _lose(self, err: BaseException) -> None:
        self._error = err
        self.lost.set()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        try:
            self._sc.release_lock(self.name, self.token)
        except (NotFound, SidecarError) as e:
            if e.code in ("not_held", "not_owner"):
                if not self.lost.is_set():
                    self._lose(e)
            elif exc_type is None and not self.lost.is_set():
                raise
        if self.lost.is_set() and exc_type is None:
            raise self._lost_error()
