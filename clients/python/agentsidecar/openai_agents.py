"""The OpenAI Agents SDK's ``Session`` protocol over the sidecar's messages.

``SidecarSession(sidecar, user_id, session_id)`` has the protocol's
``session_id`` and its four coroutines, so ``Runner.run(agent, input,
session=SidecarSession(...))`` keeps the conversation in the sidecar,
shared by every process and pod of the agent. The SDK is not a dependency:
the class matches the protocol by shape (duck typing). Each item is stored
as one message holding it unchanged (``item`` with ``format:
"openai.responses"``), so it comes back byte for byte; each write is one
call of the API (a turn too big for one request goes in parts of one
operation, visible at once), and a read follows the pages' cursors until it
holds what was asked for. Reads are of the raw path (``compacted=False``): a compaction
overlay made through the API is for other readers and never shows here, so
``pop_item`` removes exactly the newest item ``get_items`` showed.

``session_settings`` is the protocol's optional attribute: the SDK's
``SessionSettings`` (or any object with a ``limit``, or a dict), whose
``limit`` is what ``get_items()`` reads when it is given no ``limit``.

The protocol's optional parts, where the Python SDK defines them: every
history call takes the runner's ``wrapper`` (``RunContextWrapper``) by
keyword, so the runner passes it (the sidecar keeps no use for it); and
``run_compaction(args)`` (``OpenAIResponsesCompactionAwareSession``) runs a
``compact`` function of yours (the sidecar never calls a model) and
replaces the whole history with its result in one atomic transaction
(``replace_history``): other pods see the history before or after, never
between, and never an empty session.
"""

import asyncio
import functools
import inspect
import json
import uuid
from typing import Any, Callable, Dict, List, Optional, Tuple

from .errors import Conflict, NotFound, SidecarError

FORMAT = "openai.responses"
_PAGE = 1000  # the largest page the messages API serves

# A turn within these goes in one append (the sidecar stages a big one
# itself): at most the 1 000 messages of one request, and a body well under
# SIDECAR_MAX_MESSAGE_BODY_BYTES (8 MiB by default).
_ONE_CALL_MESSAGES = 1000
_ONE_CALL_BYTES = 4 << 20
# A part of a bigger turn: the sidecar takes at most 100 messages and
# 256 KiB of their bodies as it encodes them in a part (one message alone
# whatever its size); 192 KiB of their JSON as sent leaves room for the
# fields it adds.
_PART_MESSAGES = 100
_PART_BYTES = 192 << 10
# How many times a turn sent in parts is sent, from part 0, when its staged
# parts were lost.
_PART_ATTEMPTS = 3


def _role(item: Dict[str, Any]) -> str:
    role = item.get("role")
    if isinstance(role, str) and role:
        return role
    if item.get("type") in ("function_call_output", "computer_call_output", "local_shell_call_output"):
        return "tool"
    return "assistant"


def _item(message: Dict[str, Any]) -> Dict[str, Any]:
    """The SDK item a message holds: its own item when an adapter stored
    one, else one built from its role and text (messages written by other
    clients)."""
    item = message.get("item")
    if isinstance(item, dict):
        return item
    return {"role": message.get("role", "assistant"), "content": message.get("content") or ""}


def _messages(items: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    return [{"role": _role(dict(i)), "item": i, "format": FORMAT} for i in items]


def _json_bytes(message: Dict[str, Any]) -> int:
    """The UTF-8 bytes of message's JSON as the client sends it."""
    return len(json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def _parts(sizes: List[int]) -> List[Tuple[int, int]]:
    """The parts of messages of these sizes, each (from, to): at most
    _PART_MESSAGES and _PART_BYTES, one message at least."""
    out: List[Tuple[int, int]] = []
    start, size = 0, 0
    for i, n in enumerate(sizes):
        if i > start and (i - start == _PART_MESSAGES or size + n > _PART_BYTES):
            out.append((start, i))
            start, size = i, 0
        size += n
    out.append((start, len(sizes)))
    return out


class SidecarSession:
    """An OpenAI Agents SDK session stored in the sidecar session
    ``(user_id, session_id)``."""

    session_settings: Any = None  # the protocol's optional SessionSettings

    def __init__(self, sidecar: Any, user_id: str, session_id: str, *, session_settings: Any = None,
                 compact: Optional[Callable[..., Any]] = None):
        """``compact(items, args, wrapper)``, optional: the compaction
        ``run_compaction`` runs (a function or a coroutine function), given
        the whole history, the SDK's ``OpenAIResponsesCompactionArgs`` (or
        None) and the run's wrapper (add the model call's usage to
        ``wrapper.usage`` there); it answers the items that replace the
        history, or None to skip this turn."""
        self.sidecar = sidecar
        self.user_id = user_id
        self.session_id = session_id
        self.session_settings = session_settings
        self.compact = compact

    def _limit(self, limit: Optional[int]) -> Optional[int]:
        """The limit a read uses: the one given, else ``session_settings``'
        ``limit`` (None: every item), as the SDK's own sessions resolve it."""
        if limit is not None:
            return limit
        settings = self.session_settings
        if settings is None:
            return None
        if isinstance(settings, dict):
            return settings.get("limit")
        return getattr(settings, "limit", None)

    async def _run(self, fn: Any, *args: Any, **kw: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, functools.partial(fn, *args, **kw))

    async def get_items(self, limit: Optional[int] = None, *, wrapper: Any = None) -> List[Dict[str, Any]]:
        """The conversation's items, oldest first; with ``limit`` exactly the
        newest ``limit`` of them (all when there are fewer), still oldest
        first; without ``limit``, ``session_settings.limit`` when set. Pages
        follow the API's cursors, so no answer cap (a page cut with
        ``Sidecar-Truncated``) and no page size shortens the result. The raw
        path: compaction overlays are not applied."""
        return await self._run(self._get_items, self._limit(limit))

    def _get_items(self, limit: Optional[int]) -> List[Dict[str, Any]]:
        sc, u, s = self.sidecar, self.user_id, self.session_id
        if limit is not None:
            if limit <= 0:
                return []
            newest: List[Dict[str, Any]] = []
            after = None
            while len(newest) < limit:
                page = sc.list_messages(u, s, order="desc", limit=min(limit - len(newest), _PAGE), after=after, compacted=False)
                newest.extend(_item(m) for m in page["messages"])
                after = page.get("next_cursor")
                if not after or not page["messages"]:
                    break
            return list(reversed(newest[:limit]))
        return self._read_all()[0]

    def _read_all(self) -> Any:
        """Every item, oldest first, and the id of the latest message read
        ("" for none)."""
        sc, u, s = self.sidecar, self.user_id, self.session_id
        items: List[Dict[str, Any]] = []
        leaf, after = "", None
        while True:
            page = sc.list_messages(u, s, order="asc", limit=_PAGE, after=after, compacted=False)
            items.extend(_item(m) for m in page["messages"])
            if page["messages"]:
                leaf = page["messages"][-1]["id"]
            after = page.get("next_cursor")
            if not after or not page["messages"]:
                return items, leaf

    async def add_items(self, items: List[Dict[str, Any]], *, wrapper: Any = None) -> None:
        """Append the items, in order, all or nothing, whatever their count
        and size: in one call when the turn fits one request (1 000 items
        and 4 MiB of JSON), else as one ``append_items`` operation sent in
        parts (100 items or 192 KiB a part, a bigger item alone), staged by
        the sidecar until the last part and then visible at once. Parts are
        sent one after the other; when the sidecar lost the staged parts
        (409 ``part_missing``: their 5 s lease ran out, or the session was
        deleted) the operation is sent again from part 0, up to 3 times. A
        refusal (:class:`Conflict` ``session_full``, 400 for an item past
        SESSION_MAX_ITEM_BYTES, ...) raises the sidecar's error, naming the
        limit, with nothing visible."""
        if not items:
            return
        await self._run(self._add_items, items)

    def _add_items(self, items: List[Dict[str, Any]]) -> None:
        msgs = _messages(items)
        sizes = [_json_bytes(m) for m in msgs]
        if len(msgs) <= _ONE_CALL_MESSAGES and sum(sizes) <= _ONE_CALL_BYTES:
            try:
                self.sidecar.append_messages(self.user_id, self.session_id, msgs)
                return
            except SidecarError as e:
                # a sidecar with a smaller body limit: nothing was written,
                # send it in parts
                if e.status != 413 or e.code != "body_too_large":
                    raise
        self._append_in_parts(msgs, sizes)

    def _append_in_parts(self, msgs: List[Dict[str, Any]], sizes: List[int]) -> None:
        """msgs (of these JSON sizes) as one append_items operation sent in parts."""
        op = str(uuid.uuid4())
        parts = _parts(sizes)
        attempt = 1
        while True:
            try:
                for i, (start, end) in enumerate(parts):
                    tx = {"operation_id": op, "type": "append_items", "part": i, "more": i < len(parts) - 1,
                          "messages": msgs[start:end]}
                    self.sidecar.apply_message_transaction(self.user_id, self.session_id, tx)
                return
            except Conflict as e:
                if e.code != "part_missing" or attempt >= _PART_ATTEMPTS:
                    raise
                attempt += 1

    async def pop_item(self, *, wrapper: Any = None) -> Optional[Dict[str, Any]]:
        """Remove the newest item of the raw path, the last one ``get_items``
        shows, and return it (None when there is none): one atomic call, so
        concurrent pops never return the same item. A compaction overlay
        ending at that item ends with it (the API's rule for an endpoint);
        overlays over older items stay."""
        try:
            message = await self._run(self.sidecar.pop_message, self.user_id, self.session_id)
        except NotFound:
            return None
        return _item(message)

    async def clear_session(self, *, wrapper: Any = None) -> None:
        """Remove every item (the session's record, usage and Q&A entries stay)."""
        try:
            await self._run(self.sidecar.clear_messages, self.user_id, self.session_id)
        except NotFound:
            pass

    async def replace_history(self, items: List[Dict[str, Any]], *, wrapper: Any = None,
                              expected_leaf: Optional[str] = None) -> None:
        """Replace every item by ``items`` (a compaction's output) in one
        atomic, idempotent transaction of the API (``replace_history``):
        readers see the old history or the new one, never an empty one.
        ``expected_leaf``: the id of the latest message the caller read
        ("" for none); when another message is the latest now,
        :class:`Conflict` ``suffix_mismatch`` with nothing changed."""
        tx = {"operation_id": str(uuid.uuid4()), "type": "replace_history", "messages": _messages(items)}
        if expected_leaf is not None:
            tx["expected_leaf"] = expected_leaf
        await self._run(self.sidecar.apply_message_transaction, self.user_id, self.session_id, tx)

    async def run_compaction(self, args: Optional[Dict[str, Any]] = None, *, wrapper: Any = None) -> None:
        """The SDK's ``OpenAIResponsesCompactionAwareSession`` hook, which the
        runner calls after each persisted turn: runs ``compact`` (given to
        the constructor) on the whole history and replaces the history with
        its answer in one transaction; nothing without ``compact`` or when
        it answers None. The history is replaced only while its latest
        message is still the last one read (``expected_leaf``): when another
        pod appended meanwhile, nothing is replaced (its turn stays; the
        next turn compacts again)."""
        if self.compact is None:
            return
        items, leaf = await self._run(self._read_all)
        out = self.compact(items, args, wrapper)
        if inspect.isawaitable(out):
            out = await out
        if out is None:
            return
        try:
            await self.replace_history(list(out), expected_leaf=leaf)
        except Conflict as e:
            if e.code != "suffix_mismatch":
                raise


__all__ = ["SidecarSession", "FORMAT"]
