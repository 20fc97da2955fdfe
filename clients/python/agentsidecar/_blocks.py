"""Context blocks, the system prompt and the AI tools as Sidecar methods."""

from typing import Any, Dict, Optional, Union

from ._transport import Transport, path, stored



class BlocksAPI:
    _t: Transport

    # -- user blocks (every session of the user) ---------------------------

    def list_user_blocks(self, user_id: str) -> Dict[str, Any]:
        """``{blocks}`` of the user (listUserBlocks)."""
        return self._t.call("GET", path("users", user_id, "blocks"), safe=True).body

    def get_user_block(self, user_id: str, label: str) -> Dict[str, Any]:
        return self._t.call("GET", path("users", user_id, "blocks", label), safe=True).body

    def put_user_block(self, user_id: str, label: str, content: str, **fields: Any) -> Dict[str, Any]:
        """Create or replace a user block (putUserBlock); ``fields``:
        ``description``, ``max_tokens``, ``writable``, ``position``."""
        return stored(self._t.call("PUT", path("users", user_id, "blocks", label), body=dict(fields, content=content), safe=True))

    def delete_user_block(self, user_id: str, label: str) -> None:
        self._t.call("DELETE", path("users", user_id, "blocks", label))

    def append_user_block(self, user_id: str, label: str, content: str) -> Dict[str, Any]:
        """Append to a user block (appendUserBlock); never retried."""
        return self._t.call("POST", path("users", user_id, "blocks", label, "append"), body={"content": content}).body

    # -- session blocks ----------------------------------------------------------

    def list_session_blocks(self, user_id: str, session_id: str) -> Dict[str, Any]:
        """``{blocks}``: user and session blocks merged, with ``scope`` (listSessionBlocks)."""
        return self._t.call("GET", path("users", user_id, "sessions", session_id, "blocks"), safe=True).body

    def get_session_block(self, user_id: str, session_id: str, label: str) -> Dict[str, Any]:
        return self._t.call("GET", path("users", user_id, "sessions", session_id, "blocks", label), safe=True).body

    def put_session_block(self, user_id: str, session_id: str, label: str, content: str, **fields: Any) -> Dict[str, Any]:
        """Create or replace a session block (putSessionBlock)."""
        p = path("users", user_id, "sessions", session_id, "blocks", label)
        return stored(self._t.call("PUT", p, body=dict(fields, content=content), safe=True))

    def delete_session_block(self, user_id: str, session_id: str, label: str) -> None:
        self._t.call("DELETE", path("users", user_id, "sessions", session_id, "blocks", label))

    def append_session_block(self, user_id: str, session_id: str, label: str, content: str) -> Dict[str, Any]:
        """Append to the session block, else the user block (appendSessionBlock); never retried."""
        p = path("users", user_id, "sessions", session_id, "blocks", label, "append")
        return self._t.call("POST", p, body={"content": content}).body

    # -- system prompt and tools ------------------------------------------------------

    def get_system_prompt(self, user_id: str, session_id: str, *, frozen: bool = False) -> Dict[str, Any]:
        """``{prompt, tokens, frozen_at}``: the blocks rendered as the system
        prompt; ``frozen`` keeps the one frozen at the first such call (getSystemPrompt)."""
        p = path("users", user_id, "sessions", session_id, "system-prompt")
        q = [("format", "json")] + ([("frozen", "true")] if frozen else [])
        return self._t.call("GET", p, q, safe=True).body

    def refresh_system_prompt(self, user_id: str, session_id: str) -> Dict[str, Any]:
        """Freeze the prompt anew (refreshSystemPrompt)."""
        p = path("users", user_id, "sessions", session_id, "system-prompt", "refresh")
        return self._t.call("POST", p, [("format", "json")], safe=True).body

    def list_tools(self, user_id: str, session_id: str, format: Optional[str] = None) -> Dict[str, Any]:
        """``{tools}``: the definitions for ``openai`` (default) or ``anthropic`` (listTools)."""
        q = [("format", format)] if format else None
        return self._t.call("GET", path("users", user_id, "sessions", session_id, "tools"), q, safe=True).body

    def call_tool(
        self, user_id: str, session_id: str, name: str, arguments: Union[str, Dict[str, Any]], tool_call_id: Optional[str] = None
    ) -> Dict[str, Any]:
        """Run a tool call a model made: ``{result, is_error}`` (callTool).
        Retried only with a ``tool_call_id`` (a repeat answers the first result)."""
        body: Dict[str, Any] = {"arguments": arguments}
        if tool_call_id:
            body["tool_call_id"] = tool_call_id
        p = path("users", user_id, "sessions", session_id, "tools", name)
        return self._t.call("POST", p, body=body, safe=bool(tool_call_id)).body
