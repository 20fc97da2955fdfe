"""The Sidecar class: one method per operation of openapi/openapi.json,
named after its operationId in snake_case (``appendEntry`` →
``append_entry``), with ids first, then the body's fields as keywords."""

import uuid
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

from ._blocks import BlocksAPI
from ._checkpoints import CheckpointsAPI
from ._messages import MessagesAPI
from ._transport import Transport, path, stored
from .events import Event, events
from .lock import Lock
from .types import (
    TTL,
    AgentTrace,
    ContextEntry,
    CostByModel,
    Erasure,
    LockGrant,
    LockInfo,
    SessionList,
    SessionQAEntry,
    SessionRecord,
    SessionStart,
    SessionStats,
    UsageResult,
)

DEFAULT_USER_AGENT = "agentsidecar-python-client"
_UNSET: Any = object()



def _fields(**kw: Any) -> Dict[str, Any]:
    """The keywords given (not _UNSET): None is sent as null."""
    return {k: v for k, v in kw.items() if v is not _UNSET}


def _query(**kw: Any) -> List[Tuple[str, str]]:
    out = []
    for k, v in kw.items():
        if v is None:
            continue
        if isinstance(v, bool):
            v = "true" if v else "false"
        out.append((k, str(v)))
    return out


class Sidecar(MessagesAPI, BlocksAPI, CheckpointsAPI):
    """A client of one sidecar, e.g. ``Sidecar("http://127.0.0.1:7480")``.

    ``token`` is the sidecar's SIDECAR_API_TOKEN (sent as a bearer token;
    None sends nothing). ``timeout`` bounds each call in seconds (a lock
    acquire adds its wait). ``retries`` is how often a call that is safe to
    repeat is retried after a connection failure or a 503. Safe to share
    across threads: idle keep-alive connections are pooled.
    """

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:7480",
        token: Optional[str] = None,
        *,
        timeout: float = 15.0,
        retries: int = 2,
        user_agent: str = DEFAULT_USER_AGENT,
    ):
        self._t = Transport(base_url, token, timeout, retries, user_agent)

    def close(self) -> None:
        """Close the idle connections (the Sidecar stays usable)."""
        self._t.close()

    def __enter__(self) -> "Sidecar":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- Q&A entries (Cognee's SessionQAEntry) ---------------------------

    def append_entry(
        self,
        user_id: str,
        session_id: str,
        question: str,
        answer: str,
        *,
        qa_id: Optional[str] = None,
        context: Optional[str] = None,
        feedback_text: Optional[str] = None,
        feedback_score: Optional[int] = None,
        used_graph_element_ids: Optional[Mapping[str, List[str]]] = None,
        memify_metadata: Optional[Mapping[str, Any]] = None,
        used_session_context_ids: Optional[List[str]] = None,
    ) -> SessionQAEntry:
        """Append an entry (appendEntry). Without ``qa_id`` the client picks
        a UUID, so a retried append stores it once; the answer's
        ``created`` is False when the session already held the qa_id."""
        body = {"qa_id": qa_id or str(uuid.uuid4()), "question": question, "answer": answer}
        for k, v in (
            ("context", context),
            ("feedback_text", feedback_text),
            ("feedback_score", feedback_score),
            ("used_graph_element_ids", used_graph_element_ids),
            ("memify_metadata", memify_metadata),
            ("used_session_context_ids", used_session_context_ids),
        ):
            if v is not None:
                body[k] = v
        p = path("users", user_id, "sessions", session_id, "entries")
        return stored(self._t.call("POST", p, body=body, safe=True))  # type: ignore[return-value]

    def list_entries(self, user_id: str, session_id: str, last_n: Optional[int] = None) -> List[SessionQAEntry]:
        """The newest ``last_n`` entries (default 10), oldest first (listEntries)."""
        p = path("users", user_id, "sessions", session_id, "entries")
        return self._t.call("GET", p, _query(last_n=last_n), safe=True).body

    def get_entry(self, user_id: str, session_id: str, qa_id: str) -> SessionQAEntry:
        """One entry (getEntry); NotFound when there is none."""
        return self._t.call("GET", path("users", user_id, "sessions", session_id, "entries", qa_id), safe=True).body

    def update_entry(self, user_id: str, session_id: str, qa_id: str, **fields: Any) -> SessionQAEntry:
        """Set the fields given (None sends null: clears a nullable field);
        ``memify_metadata`` is merged key-wise (updateEntry)."""
        p = path("users", user_id, "sessions", session_id, "entries", qa_id)
        return self._t.call("PATCH", p, body=fields, safe=True).body

    def delete_entry(self, user_id: str, session_id: str, qa_id: str) -> None:
        """Remove an entry (deleteEntry)."""
        self._t.call("DELETE", path("users", user_id, "sessions", session_id, "entries", qa_id))

    def set_feedback(
        self,
        user_id: str,
        session_id: str,
        qa_id: str,
        *,
        feedback_text: Optional[str] = _UNSET,
        feedback_score: Optional[int] = _UNSET,
    ) -> SessionQAEntry:
        """Set feedback_text and/or feedback_score (1-5); None clears one (setFeedback)."""
        p = path("users", user_id, "sessions", session_id, "entries", qa_id, "feedback")
        body = _fields(feedback_text=feedback_text, feedback_score=feedback_score)
        return self._t.call("PUT", p, body=body, safe=True).body

    def clear_feedback(self, user_id: str, session_id: str, qa_id: str) -> SessionQAEntry:
        """Clear both feedback fields (clearFeedback)."""
        p = path("users", user_id, "sessions", session_id, "entries", qa_id, "feedback")
        return self._t.call("DELETE", p, safe=True).body

    def search_entries(self, user_id: str, session_id: str, q: str, limit: Optional[int] = None) -> List[SessionQAEntry]:
        """Entries containing every word of ``q``, newest first (searchEntries)."""
        p = path("users", user_id, "sessions", session_id, "search")
        return self._t.call("GET", p, _query(q=q, limit=limit), safe=True).body

    def delete_session(self, user_id: str, session_id: str) -> None:
        """Remove the session and every key it owns (deleteSession)."""
        self._t.call("DELETE", path("users", user_id, "sessions", session_id))

    # -- traces and session context --------------------------------------

    def append_trace(self, user_id: str, session_id: str, origin_function: str, status: str, **fields: Any) -> AgentTrace:
        """Append an agent trace step (appendTrace); ``fields`` are the
        optional ones (trace_id, memory_query, method_params, ...)."""
        body = dict(fields, origin_function=origin_function, status=status)
        return self._t.call("POST", path("users", user_id, "sessions", session_id, "traces"), body=body).body

    def list_traces(self, user_id: str, session_id: str, last_n: Optional[int] = None) -> List[AgentTrace]:
        """The newest ``last_n`` trace steps, oldest first (listTraces)."""
        p = path("users", user_id, "sessions", session_id, "traces")
        return self._t.call("GET", p, _query(last_n=last_n), safe=True).body

    def append_context(self, user_id: str, session_id: str, entry: Mapping[str, Any]) -> ContextEntry:
        """Append a session-context entry (appendContext): any JSON object;
        without an "id" the client picks a UUID so a retry stores it once.
        ``created`` is False when the session already held the id."""
        body = dict(entry)
        body.setdefault("id", str(uuid.uuid4()))
        p = path("users", user_id, "sessions", session_id, "context")
        return stored(self._t.call("POST", p, body=body, safe=True))

    def list_context(self, user_id: str, session_id: str) -> List[ContextEntry]:
        """The session's context entries, oldest first (listContext)."""
        return self._t.call("GET", path("users", user_id, "sessions", session_id, "context"), safe=True).body

    def update_context(self, user_id: str, session_id: str, id: str, patch: Mapping[str, Any]) -> ContextEntry:
        """Merge ``patch`` shallowly into a context entry (updateContext)."""
        p = path("users", user_id, "sessions", session_id, "context", id)
        return self._t.call("PATCH", p, body=dict(patch), safe=True).body

    def delete_context(self, user_id: str, session_id: str, id: str) -> None:
        """Remove a context entry (deleteContext)."""
        self._t.call("DELETE", path("users", user_id, "sessions", session_id, "context", id))

    # -- TTL ----------------------------------------------------------------

    def get_session_ttl(self, user_id: str, session_id: str) -> TTL:
        """``{"ttl_seconds": n}``, -1 = no expiry (getSessionTTL)."""
        return self._t.call("GET", path("users", user_id, "sessions", session_id, "ttl"), safe=True).body

    def set_session_ttl(self, user_id: str, session_id: str, ttl_seconds: int) -> TTL:
        """Set the TTL of every key of the session; 0 = never expires,
        answered as -1 (setSessionTTL)."""
        p = path("users", user_id, "sessions", session_id, "ttl")
        return self._t.call("PUT", p, body={"ttl_seconds": ttl_seconds}, safe=True).body

    # -- usage and lifecycle -------------------------------------------------

    def record_usage(
        self,
        user_id: str,
        session_id: str,
        model: str,
        *,
        tokens_in: Optional[int] = None,
        tokens_out: Optional[int] = None,
        cost_usd: Optional[float] = None,
        input_text: Optional[str] = None,
        output_text: Optional[str] = None,
        error: bool = False,
        idempotency_key: Optional[str] = None,
    ) -> UsageResult:
        """Count one LLM call (recordUsage). Every post carries an
        Idempotency-Key (a UUID unless given), so a retry counts once; the
        answer's ``created`` is False for a key seen before."""
        body: Dict[str, Any] = {"model": model}
        for k, v in (
            ("tokens_in", tokens_in),
            ("tokens_out", tokens_out),
            ("cost_usd", cost_usd),
            ("input_text", input_text),
            ("output_text", output_text),
        ):
            if v is not None:
                body[k] = v
        if error:
            body["error"] = True
        key = idempotency_key or str(uuid.uuid4())
        p = path("users", user_id, "sessions", session_id, "usage")
        return stored(self._t.call("POST", p, body=body, headers={"Idempotency-Key": key}, safe=True))  # type: ignore[return-value]

    def get_session(self, user_id: str, session_id: str) -> SessionRecord:
        """The session's record with its derived status and TTL (getSession)."""
        return self._t.call("GET", path("users", user_id, "sessions", session_id), safe=True).body

    def complete_session(self, user_id: str, session_id: str, summary: Optional[str] = None) -> SessionRecord:
        """End the session as completed, with an optional summary (completeSession)."""
        body = {} if summary is None else {"summary": summary}
        p = path("users", user_id, "sessions", session_id, "complete")
        return self._t.call("POST", p, body=body, safe=True).body

    def fail_session(self, user_id: str, session_id: str, summary: Optional[str] = None) -> SessionRecord:
        """End the session as failed (failSession)."""
        body = {} if summary is None else {"summary": summary}
        return self._t.call("POST", path("users", user_id, "sessions", session_id, "fail"), body=body, safe=True).body

    def list_user_sessions(
        self,
        user_id: str,
        *,
        status: Optional[str] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        metadata: Optional[Mapping[str, str]] = None,
    ) -> SessionList:
        """One page of the user's sessions, most recently active first
        (listUserSessions); ``iter_user_sessions`` follows the cursors."""
        q = _query(status=status, limit=limit, cursor=cursor)
        q += [("metadata." + k, v) for k, v in (metadata or {}).items()]
        return self._t.call("GET", path("users", user_id, "sessions"), q, safe=True).body

    def list_sessions(
        self,
        *,
        status: Optional[str] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        metadata: Optional[Mapping[str, str]] = None,
    ) -> SessionList:
        """One page of every user's sessions (listSessions); ``iter_sessions`` follows the cursors."""
        q = _query(status=status, limit=limit, cursor=cursor)
        q += [("metadata." + k, v) for k, v in (metadata or {}).items()]
        return self._t.call("GET", "/v1/sessions", q, safe=True).body

    def iter_user_sessions(self, user_id: str, **kw: Any) -> Iterator[SessionRecord]:
        """Every session of the user, page after page (list_user_sessions' keywords)."""
        return self._pages(lambda **k: self.list_user_sessions(user_id, **k), kw)

    def iter_sessions(self, **kw: Any) -> Iterator[SessionRecord]:
        """Every session of every user, page after page (list_sessions' keywords)."""
        return self._pages(self.list_sessions, kw)

    @staticmethod
    def _pages(page: Any, kw: Dict[str, Any]) -> Iterator[SessionRecord]:
        while True:
            answer = page(**kw)
            yield from answer["sessions"]
            if not answer.get("next_cursor"):
                return
            kw = dict(kw, cursor=answer["next_cursor"])

    def get_session_stats(self) -> SessionStats:
        """Sessions by status now and all-time usage (getSessionStats)."""
        return self._t.call("GET", "/v1/sessions/stats", safe=True).body

    def get_cost_by_model(self, days: Optional[int] = None) -> CostByModel:
        """Usage per model name, most expensive first; ``days`` limits it to
        the last days (getCostByModel)."""
        return self._t.call("GET", "/v1/sessions/cost-by-model", _query(days=days), safe=True).body

    # -- session registry ----------------------------------------------------

    def create_session(
        self,
        user_id: str,
        *,
        session_id: Optional[str] = None,
        title: Optional[str] = None,
        metadata: Optional[Mapping[str, str]] = None,
        state: Optional[Mapping[str, Any]] = None,
        idempotency_key: Optional[str] = None,
    ) -> SessionRecord:
        """Create a session (createSession); Conflict ``session_exists`` when
        it exists. Carries an Idempotency-Key (a UUID unless given), so a
        retry answers the created record with ``created`` False."""
        body: Dict[str, Any] = {}
        for k, v in (("session_id", session_id), ("title", title), ("metadata", metadata), ("state", state)):
            if v is not None:
                body[k] = v
        key = idempotency_key or str(uuid.uuid4())
        p = path("users", user_id, "sessions")
        return stored(self._t.call("POST", p, body=body, headers={"Idempotency-Key": key}, safe=True))  # type: ignore[return-value]

    def update_session(self, user_id: str, session_id: str, **fields: Any) -> SessionRecord:
        """Set ``title`` (None removes it) and merge-patch ``metadata`` (a
        None value removes that key) (updateSession)."""
        return self._t.call("PATCH", path("users", user_id, "sessions", session_id), body=fields, safe=True).body

    def start_session(
        self,
        user_id: str,
        *,
        title: Optional[str] = None,
        metadata: Optional[Mapping[str, str]] = None,
        match: Optional[Mapping[str, str]] = None,
    ) -> SessionStart:
        """Start or reuse the user's active session (startSession): ``is_new`` says which."""
        body = {k: v for k, v in (("title", title), ("metadata", metadata), ("match", match)) if v is not None}
        return stored(self._t.call("POST", path("users", user_id, "active-session"), body=body, safe=True))  # type: ignore[return-value]

    def end_active_session(
        self, user_id: str, *, summary: Optional[str] = None, match: Optional[Mapping[str, str]] = None
    ) -> SessionRecord:
        """End the session start_session would reuse (endActiveSession); NotFound when none runs."""
        body = {k: v for k, v in (("summary", summary), ("match", match)) if v is not None}
        return self._t.call("POST", path("users", user_id, "active-session", "end"), body=body).body

    def get_session_state(self, user_id: str, session_id: str) -> Dict[str, Any]:
        """The session's state object (getSessionState)."""
        return self._t.call("GET", path("users", user_id, "sessions", session_id, "state"), safe=True).body

    def patch_session_state(self, user_id: str, session_id: str, patch: Mapping[str, Any]) -> Dict[str, Any]:
        """Apply a JSON merge patch (None removes a key) and return the new state (patchSessionState)."""
        p = path("users", user_id, "sessions", session_id, "state")
        return self._t.call("PATCH", p, body=dict(patch), safe=True).body

    def get_user_state(self, user_id: str) -> Dict[str, Any]:
        """The user's state object (getUserState)."""
        return self._t.call("GET", path("users", user_id, "state"), safe=True).body

    def patch_user_state(self, user_id: str, patch: Mapping[str, Any]) -> Dict[str, Any]:
        """Merge-patch the user's state and return it (patchUserState)."""
        return self._t.call("PATCH", path("users", user_id, "state"), body=dict(patch), safe=True).body

    def erase_user(self, user_id: str) -> Erasure:
        """Erase every key and index member of the user in bounded steps
        (eraseUser): ``{"erased": True}`` when done, else ``{"erased":
        False, "remaining": n}`` (an estimate of the sessions left): call
        again, from any process, until done. Until 30 s after it is done
        the user's writes raise ``Conflict`` with code ``user_erasing``."""
        return self._t.call("DELETE", path("users", user_id), safe=True).body

    # -- Google ADK sessions (module adk) -------------------------------------

    def create_adk_session(
        self, app_name: str, user_id: str, session_id: Optional[str] = None, state: Optional[Mapping[str, Any]] = None
    ) -> Dict[str, Any]:
        """Create an ADK session (createAdkSession): state's app: and user:
        keys go to the app's and the user's state, temp: keys are dropped;
        an id in use raises Conflict (session_exists)."""
        body: Dict[str, Any] = {}
        if session_id is not None:
            body["session_id"] = session_id
        if state is not None:
            body["state"] = dict(state)
        return self._t.call("POST", path("adk", "apps", app_name, "users", user_id, "sessions"), body=body).body

    def list_adk_sessions(
        self, app_name: str, user_id: str, limit: Optional[int] = None, offset: Optional[int] = None,
        page: Optional[int] = None, order: Optional[str] = None,
    ) -> Dict[str, Any]:
        """The user's ADK sessions of the app, ADK's paging and order
        (listAdkSessions): {sessions, page, limit, total_items, total_pages}."""
        p = path("adk", "apps", app_name, "users", user_id, "sessions")
        return self._t.call("GET", p, _query(limit=limit, offset=offset, page=page, order=order), safe=True).body

    def list_adk_app_sessions(
        self, app_name: str, limit: Optional[int] = None, offset: Optional[int] = None,
        page: Optional[int] = None, order: Optional[str] = None, cursor: Optional[str] = None,
    ) -> Dict[str, Any]:
        """The app's ADK sessions of every user, ADK's paging and order
        (listAdkAppSessions): {sessions, page, limit, total_items,
        total_pages, next_cursor}; pass next_cursor alone as cursor for the
        rest of a window past 1 000 sessions."""
        p = path("adk", "apps", app_name, "sessions")
        q = _query(limit=limit, offset=offset, page=page, order=order, cursor=cursor)
        return self._t.call("GET", p, q, safe=True).body

    def get_adk_session(
        self, app_name: str, user_id: str, session_id: str, num_recent_events: Optional[int] = None,
        after_timestamp: Optional[float] = None, limit: Optional[int] = None, cursor: Optional[str] = None,
    ) -> Dict[str, Any]:
        """A page of an ADK session (getAdkSession): state on the first page,
        events oldest first; follow next_cursor for older events."""
        p = path("adk", "apps", app_name, "users", user_id, "sessions", session_id)
        q = _query(num_recent_events=num_recent_events, after_timestamp=after_timestamp, limit=limit, cursor=cursor)
        return self._t.call("GET", p, q, safe=True).body

    def delete_adk_session(self, app_name: str, user_id: str, session_id: str) -> None:
        """Delete the ADK session, the whole sidecar session (deleteAdkSession)."""
        self._t.call("DELETE", path("adk", "apps", app_name, "users", user_id, "sessions", session_id))

    def append_adk_event(
        self, app_name: str, user_id: str, session_id: str, event: Mapping[str, Any], last_update_time: float,
        state_delta: Optional[Mapping[str, Any]] = None,
    ) -> Dict[str, Any]:
        """Store an event and its state delta in one script (appendAdkEvent);
        a stale copy raises Conflict (stale_session), nothing stored."""
        body: Dict[str, Any] = {"event": dict(event), "last_update_time": last_update_time}
        if state_delta is not None:
            body["state_delta"] = dict(state_delta)
        p = path("adk", "apps", app_name, "users", user_id, "sessions", session_id, "events")
        return self._t.call("POST", p, body=body).body

    # -- locks ---------------------------------------------------------------

    def acquire_lock(
        self, name: str, *, owner: Optional[str] = None, ttl_ms: Optional[int] = None, wait_ms: Optional[int] = None
    ) -> LockGrant:
        """Take the lock, waiting up to ``wait_ms`` (acquireLock); LockHeld
        when it stayed held. Never retried (a retry could take it twice)."""
        body = {k: v for k, v in (("owner", owner), ("ttl_ms", ttl_ms), ("wait_ms", wait_ms)) if v is not None}
        timeout = self._t.timeout + (wait_ms or 0) / 1000.0
        return self._t.call("POST", path("locks", name), body=body, timeout=timeout).body

    def refresh_lock(self, name: str, token: str, ttl_ms: Optional[int] = None) -> LockGrant:
        """Renew a lock held with ``token`` (refreshLock); LockLost when it no longer does."""
        body: Dict[str, Any] = {"token": token}
        if ttl_ms is not None:
            body["ttl_ms"] = ttl_ms
        return self._t.call("POST", path("locks", name, "refresh"), body=body, safe=True).body

    def release_lock(self, name: str, token: str) -> None:
        """Free a lock held with ``token`` (releaseLock): NotFound
        ``not_held`` when nobody holds it, Conflict ``not_owner`` when
        another token does (that lock is left alone)."""
        self._t.call("DELETE", path("locks", name), body={"token": token})

    def inspect_lock(self, name: str) -> LockInfo:
        """Whether the lock is held, and by whom (inspectLock)."""
        return self._t.call("GET", path("locks", name), safe=True).body

    def lock(self, name: str, ttl: float = 30, wait: float = 10, owner: Optional[str] = None) -> Lock:
        """A context manager holding the lock ``name``: ``with
        sc.lock("graph_writes", ttl=30, wait=10) as lk:`` takes it (waiting
        up to ``wait`` seconds, else LockHeld), refreshes it in the
        background every ttl/3, releases it on exit, and raises LockLost on
        exit if it was lost meanwhile. ``lk.fencing_token`` is for the
        protected resource."""
        return Lock(self, name, ttl, wait, owner)

    # -- events and abort ------------------------------------------------------

    def get_session_events(
        self,
        user_id: str,
        session_id: str,
        *,
        last_event_id: Optional[str] = None,
        reconnect: bool = True,
        read_timeout: float = 60.0,
    ) -> Iterator[Event]:
        """The session's event stream (getSessionEvents): Event(id, event,
        data) in id order, reconnecting with Last-Event-ID after a dropped
        connection (the stream's ``retry`` delay apart); ends after
        ``deleted``. Break out of the loop to stop. Also ``sc.events``."""
        p = path("users", user_id, "sessions", session_id, "events")
        return events(self._t, p, last_event_id, reconnect, read_timeout)

    events = get_session_events

    def get_user_events(self, user_id: str, *, last_event_id: Optional[str] = None, reconnect: bool = True) -> Iterator[Event]:
        """The user's event stream (user-level changes), as get_session_events (getUserEvents)."""
        return events(self._t, path("users", user_id, "events"), last_event_id, reconnect, 60.0)

    def publish_session_event(self, user_id: str, session_id: str, event: str, data: Any) -> Dict[str, Any]:
        """Publish a custom event (``x-<name>``) on the session's stream: ``{"id"}`` (publishSessionEvent)."""
        p = path("users", user_id, "sessions", session_id, "events")
        return self._t.call("POST", p, body={"event": event, "data": data}).body

    def request_abort(self, user_id: str, session_id: str) -> Dict[str, Any]:
        """Ask the agent of the session to stop (requestAbort): every write
        answer carries Sidecar-Abort-Requested until it is cleared."""
        return self._t.call("POST", path("users", user_id, "sessions", session_id, "abort"), safe=True).body

    def clear_abort(self, user_id: str, session_id: str) -> None:
        """Withdraw the abort request (clearAbort)."""
        self._t.call("DELETE", path("users", user_id, "sessions", session_id, "abort"), safe=True)
