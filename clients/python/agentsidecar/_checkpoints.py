"""A LangGraph thread's checkpoints (module ``checkpoints``) as Sidecar methods.

The TypeScript client's ``SidecarCheckpointSaver`` is LangGraph's saver on
them; a thread is a session (docs/checkpoints.md)."""

import json
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ._transport import Transport, path


class CheckpointsAPI:
    _t: Transport

    def put_checkpoint(self, user_id: str, session_id: str, body: Mapping[str, Any]) -> Dict[str, Any]:
        """Store a checkpoint (putCheckpoint): ``checkpoint_ns``, ``checkpoint_id``,
        ``parent_checkpoint_id``, ``checkpoint`` {type, data (base64)}, ``metadata``,
        ``channel_versions``, ``channel_values``. An upsert: safe to retry."""
        p = path("users", user_id, "sessions", session_id, "checkpoints")
        return self._t.call("POST", p, body=dict(body), safe=True).body

    def put_checkpoint_writes(self, user_id: str, session_id: str, body: Mapping[str, Any]) -> Dict[str, Any]:
        """Store a task's pending writes (putCheckpointWrites): ``{stored}``; a
        retry stores each write once."""
        p = path("users", user_id, "sessions", session_id, "checkpoints", "writes")
        return self._t.call("POST", p, body=dict(body), safe=True).body

    def get_checkpoint_tuple(self, user_id: str, session_id: str, checkpoint_ns: str = "",
                             checkpoint_id: Optional[str] = None) -> Dict[str, Any]:
        """A checkpoint by id, or the namespace's newest (getCheckpointTuple); NotFound when none."""
        q: List[Tuple[str, str]] = [("checkpoint_ns", checkpoint_ns)]
        if checkpoint_id:
            q.append(("checkpoint_id", checkpoint_id))
        p = path("users", user_id, "sessions", session_id, "checkpoints", "tuple")
        return self._t.call("GET", p, query=q, safe=True).body

    def list_checkpoints(self, user_id: str, session_id: str, checkpoint_ns: Optional[str] = None,
                         before: Optional[str] = None, limit: Optional[int] = None,
                         filter: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
        """A page of checkpoints, newest id first (listCheckpoints): ``{checkpoints,
        next_before}``; ``checkpoint_ns`` None = every namespace."""
        q: List[Tuple[str, str]] = []
        if checkpoint_ns is not None:
            q.append(("checkpoint_ns", checkpoint_ns))
        if before:
            q.append(("before", before))
        if limit is not None:
            q.append(("limit", str(limit)))
        if filter:
            q.append(("filter", json.dumps(dict(filter), separators=(",", ":"))))
        p = path("users", user_id, "sessions", session_id, "checkpoints")
        return self._t.call("GET", p, query=q, safe=True).body
