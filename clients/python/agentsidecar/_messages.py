"""The messages API (a conversation tree per session) as Sidecar methods."""

import uuid
from typing import Any, Dict, List, Mapping, Optional

from ._transport import Transport, path, stored



def _q(**kw: Any) -> List[Any]:
    out = []
    for k, v in kw.items():
        if v is None:
            continue
        out.append((k, ("true" if v else "false") if isinstance(v, bool) else str(v)))
    return out


class MessagesAPI:
    _t: Transport

    def append_messages(
        self,
        user_id: str,
        session_id: str,
        messages: List[Mapping[str, Any]],
        *,
        if_leaf: Optional[str] = None,
    ) -> List[Dict[str, Any]]:
        """Append messages chained in order, all or nothing (appendMessages).
        Each gets a client id (a UUID) unless it has one, and the call an
        Idempotency-Key, so a retry stores them once. ``if_leaf``: 412
        ``leaf_moved`` unless the latest leaf is that message. Returns the
        stored messages."""
        batch = [dict(m) for m in messages]
        for m in batch:
            m.setdefault("id", str(uuid.uuid4()))
        headers = {"Idempotency-Key": str(uuid.uuid4())}
        if if_leaf:
            headers["If-Match"] = '"%s"' % if_leaf
        p = path("users", user_id, "sessions", session_id, "messages")
        body = self._t.call("POST", p, body={"messages": batch}, headers=headers, safe=True).body
        return body["messages"] if isinstance(body, dict) and "messages" in body else [body]

    def append_message(self, user_id: str, session_id: str, role: str, content: Optional[str] = None, **fields: Any) -> Dict[str, Any]:
        """Append one message (appendMessages with one message): ``created``
        is False when its id was already stored with the same fields."""
        body = dict(fields, role=role)
        if content is not None:
            body["content"] = content
        body.setdefault("id", str(uuid.uuid4()))
        p = path("users", user_id, "sessions", session_id, "messages")
        headers = {"Idempotency-Key": str(uuid.uuid4())}
        return stored(self._t.call("POST", p, body=body, headers=headers, safe=True))

    def list_messages(
        self,
        user_id: str,
        session_id: str,
        *,
        leaf: Optional[str] = None,
        order: Optional[str] = None,
        limit: Optional[int] = None,
        after: Optional[str] = None,
        before: Optional[str] = None,
        offset: Optional[int] = None,
        compacted: Optional[bool] = None,
    ) -> Dict[str, Any]:
        """One page of the path to ``leaf`` (default the latest leaf):
        ``{messages, total, total_tokens, next_cursor, compaction_suggested}`` (listMessages)."""
        p = path("users", user_id, "sessions", session_id, "messages")
        q = _q(leaf=leaf, order=order, limit=limit, after=after, before=before, offset=offset, compacted=compacted)
        return self._t.call("GET", p, q, safe=True).body

    def get_message(self, user_id: str, session_id: str, message_id: str) -> Dict[str, Any]:
        """One message (getMessage); NotFound when there is none."""
        return self._t.call("GET", path("users", user_id, "sessions", session_id, "messages", message_id), safe=True).body

    def put_message(self, user_id: str, session_id: str, message_id: str, role: str, **fields: Any) -> Dict[str, Any]:
        """Create the message with that id, or replace its content fields in
        place (putMessage); ``created`` tells which."""
        p = path("users", user_id, "sessions", session_id, "messages", message_id)
        return stored(self._t.call("PUT", p, body=dict(fields, role=role), safe=True))

    def patch_message(self, user_id: str, session_id: str, message_id: str, **fields: Any) -> Dict[str, Any]:
        """Replace ``content``, ``parts``, ``item`` or ``metadata`` (patchMessage)."""
        p = path("users", user_id, "sessions", session_id, "messages", message_id)
        return self._t.call("PATCH", p, body=fields, safe=True).body

    def delete_message(self, user_id: str, session_id: str, message_id: str, *, subtree: bool = False) -> None:
        """Delete a leaf, or with ``subtree`` a message and its descendants
        (deleteMessage); Conflict ``has_children`` otherwise."""
        p = path("users", user_id, "sessions", session_id, "messages", message_id)
        self._t.call("DELETE", p, _q(subtree=True if subtree else None))

    def list_children(self, user_id: str, session_id: str, message_id: str, limit: Optional[int] = None) -> Dict[str, Any]:
        """``{messages}``: the branches from that message, oldest first (listChildren)."""
        p = path("users", user_id, "sessions", session_id, "messages", message_id, "children")
        return self._t.call("GET", p, _q(limit=limit), safe=True).body

    def search_user(self, user_id: str, q: str, limit: Optional[int] = None) -> Dict[str, Any]:
        """``{results}``: the user's messages across all of their sessions
        that match ``q``, best first (searchUser; BM25 over stemmed words):
        each ``{session_id, kind, id, snippet, score, time}``."""
        return self._t.call("GET", path("users", user_id, "search"), _q(q=q, limit=limit), safe=True).body

    def search_relevant(self, user_id: str, session_id: str, q: str, limit: Optional[int] = None) -> Dict[str, Any]:
        """``{results}``: the session's messages matching ``q``, ranked by
        relevance (searchEntries with ``rank=relevance``)."""
        p = path("users", user_id, "sessions", session_id, "search")
        return self._t.call("GET", p, _q(q=q, limit=limit, rank="relevance"), safe=True).body

    def pop_message(self, user_id: str, session_id: str) -> Dict[str, Any]:
        """Remove the latest leaf and return it (popMessage); NotFound when
        there are no messages. Never retried (a repeat would pop another)."""
        return self._t.call("POST", path("users", user_id, "sessions", session_id, "messages", "pop")).body

    def apply_message_transaction(self, user_id: str, session_id: str, transaction: Dict[str, Any]) -> Dict[str, Any]:
        """One atomic history transaction on the latest path
        (applyMessageTransaction): ``{"operation_id", "type": "append_items"
        | "replace_suffix" | "replace_function_call" | "replace_history",
        ...}``. Idempotent by ``operation_id`` (a repeat answers the first
        result with ``applied`` false), so it is retried like a safe call.
        Answers ``{operation_id, applied, messages}``."""
        p = path("users", user_id, "sessions", session_id, "messages", "transactions")
        return self._t.call("POST", p, body=transaction, safe=True).body

    def clear_messages(self, user_id: str, session_id: str) -> None:
        """Remove every message and compaction, keeping the record, usage
        and Q&A entries (clearMessages)."""
        self._t.call("DELETE", path("users", user_id, "sessions", session_id, "messages"), safe=True)

    # -- compactions, fork, split ---------------------------------------------------

    def create_compaction(self, user_id: str, session_id: str, summary: str, from_id: str, to_id: str) -> Dict[str, Any]:
        """Summarise the path from ``from_id`` to ``to_id``: reads then show
        one ``compaction:<id>`` message for the range (createCompaction).
        Never retried (a repeat would supersede the first)."""
        p = path("users", user_id, "sessions", session_id, "compactions")
        return self._t.call("POST", p, body={"summary": summary, "from_id": from_id, "to_id": to_id}).body

    def list_compactions(self, user_id: str, session_id: str) -> Dict[str, Any]:
        """``{compactions}`` in force, oldest first (listCompactions)."""
        return self._t.call("GET", path("users", user_id, "sessions", session_id, "compactions"), safe=True).body

    def fork_session(
        self,
        user_id: str,
        session_id: str,
        at: str,
        *,
        new_session_id: Optional[str] = None,
        title: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> Dict[str, Any]:
        """A new session holding the path root..``at`` (forkSession): its
        record, ``parent_session_id`` = session_id. Carries an
        Idempotency-Key (a UUID unless given), so a retry forks once."""
        body: Dict[str, Any] = {"at": at}
        if new_session_id is not None:
            body["session_id"] = new_session_id
        if title is not None:
            body["title"] = title
        headers = {"Idempotency-Key": idempotency_key or str(uuid.uuid4())}
        p = path("users", user_id, "sessions", session_id, "fork")
        return stored(self._t.call("POST", p, body=body, headers=headers, safe=True))

    def split_session(
        self,
        user_id: str,
        session_id: str,
        summary: str,
        *,
        new_session_id: Optional[str] = None,
        title: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> Dict[str, Any]:
        """End this session (``end_reason: split``) and start its
        continuation with a system message holding ``summary``
        (splitSession): the continuation's record. Retry-safe like fork."""
        body: Dict[str, Any] = {"summary": summary}
        if new_session_id is not None:
            body["session_id"] = new_session_id
        if title is not None:
            body["title"] = title
        headers = {"Idempotency-Key": idempotency_key or str(uuid.uuid4())}
        p = path("users", user_id, "sessions", session_id, "split")
        return stored(self._t.call("POST", p, body=body, headers=headers, safe=True))
