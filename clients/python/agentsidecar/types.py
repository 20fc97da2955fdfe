"""The document's schemas (openapi/openapi.json) as TypedDicts.

Answers are plain ``dict`` objects decoded from JSON, with the document's
field names; these types describe them for editors and type checkers. Times
are ISO 8601 strings as the sidecar sends them. Answers to calls that may
store or find (``append_entry``, ``append_context``, ``record_usage``,
``create_session``, ``start_session``, ``append_messages``) are
:class:`Stored` dicts whose ``created`` attribute tells a 201 (stored now)
from a 200 (a safe repeat: nothing was written, this is the stored value).
"""

from typing import Any, Dict, List, Literal, Optional, TypedDict

__all__ = [
    "Stored",
    "Erasure",
    "SessionQAEntry",
    "GraphElementIds",
    "AgentTrace",
    "ContextEntry",
    "TTL",
    "ModelUsage",
    "SessionRecord",
    "SessionList",
    "UsageResult",
    "SessionCounts",
    "SessionStats",
    "ModelTotals",
    "CostByModel",
    "LockGrant",
    "LockInfo",
    "SessionContext",
    "SessionStart",
    "SessionStatus",
]

SessionStatus = Literal["running", "abandoned", "completed", "failed"]


class Stored(dict):
    """A JSON object answer with ``created``: True when this call stored it
    (201), False when the sidecar already held it (200: nothing written)."""

    created: bool = False


class _ErasureBase(TypedDict):
    erased: bool


class Erasure(_ErasureBase, total=False):
    """The answer of erase_user: erased, or an estimate of the sessions left."""

    remaining: int


class GraphElementIds(TypedDict, total=False):
    node_ids: List[str]
    edge_ids: List[str]


class SessionQAEntry(TypedDict):
    """One Q&A entry, Cognee's SessionQAEntry."""

    time: str
    question: str
    context: str
    answer: str
    qa_id: str
    feedback_text: Optional[str]
    feedback_score: Optional[int]
    used_graph_element_ids: Optional[GraphElementIds]
    memify_metadata: Optional[Dict[str, Any]]
    used_session_context_ids: Optional[List[str]]


class _AgentTraceBase(TypedDict):
    trace_id: str
    origin_function: str
    status: str


class AgentTrace(_AgentTraceBase, total=False):
    """One agent trace step, Cognee's SessionAgentTraceEntry."""

    memory_query: str
    memory_context: str
    method_params: Optional[Dict[str, Any]]
    method_return_value: Any
    error_message: str
    session_feedback: str


# A session-context entry: any JSON object with a string "id".
ContextEntry = Dict[str, Any]


class TTL(TypedDict):
    ttl_seconds: int  # -1: no expiry


class ModelUsage(TypedDict):
    tokens_in: int
    tokens_out: int
    cost_usd: float


class _SessionRecordBase(TypedDict):
    user_id: str
    session_id: str
    status: SessionStatus
    stored_status: str
    started_at: Optional[str]
    last_activity_at: Optional[str]
    ended_at: Optional[str]
    tokens_in: int
    tokens_out: int
    cost_usd: float
    calls: int
    error_count: int
    last_model: Optional[str]
    entry_count: int
    models: Dict[str, ModelUsage]
    title: Optional[str]
    metadata: Dict[str, str]
    parent_session_id: Optional[str]
    summary: Optional[str]
    summary_auto_generated: bool
    end_reason: Optional[str]
    message_count: int


class SessionRecord(_SessionRecordBase, total=False):
    """A session's lifecycle and usage record."""

    ttl_seconds: int  # only in answers about one session
    derived_from_list: bool  # only Cognee wrote the session


class SessionList(TypedDict):
    sessions: List[SessionRecord]
    next_cursor: Optional[str]  # null or "" on the last page


class UsageResult(TypedDict):
    model: str
    priced_as: Optional[str]
    tokens_in: int
    tokens_out: int
    tokens_estimated: bool
    cost_usd: float
    cost_source: str  # explicit, price_table or unknown_model
    error: bool


class SessionCounts(TypedDict):
    running: int
    abandoned: int
    completed: int
    failed: int
    total: int


class SessionStats(TypedDict):
    sessions: SessionCounts
    tokens_in: int
    tokens_out: int
    cost_usd: float
    calls: int
    errors: int
    success_rate: Optional[float]


class ModelTotals(TypedDict):
    model: str
    tokens_in: int
    tokens_out: int
    cost_usd: float
    calls: int
    errors: int


class CostByModel(TypedDict):
    models: List[ModelTotals]


class _LockGrantBase(TypedDict):
    token: str
    fencing_token: int
    owner: str
    expires_at: str
    ttl_ms: int


class LockGrant(_LockGrantBase, total=False):
    replicated: bool


class _LockInfoBase(TypedDict):
    held: bool


class LockInfo(_LockInfoBase, total=False):
    owner: str
    ttl_ms: int
    fencing_token: int


class SessionContext(TypedDict):
    session_id: str
    title: Optional[str]
    summary: Optional[str]
    summary_auto_generated: bool
    started_at: Optional[str]
    ended_at: Optional[str]


class SessionStart(TypedDict):
    session_id: str
    is_new: bool
    closed: List[str]
    sessions_context: List[SessionContext]
    recent: List[Dict[str, Any]]
