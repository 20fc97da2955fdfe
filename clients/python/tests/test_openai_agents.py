"""SidecarSession: the OpenAI Agents SDK's Session protocol by shape, and
over the live messages API once the sidecar serves it."""

import asyncio
import inspect
import unittest

from agentsidecar import Sidecar
from agentsidecar.openai_agents import FORMAT, SidecarSession

from .support import URL, has_route, unique

MESSAGES = "/v1/users/{user_id}/sessions/{session_id}/messages"


class Protocol(unittest.TestCase):
    def test_shape(self):
        """The protocol of agents.memory.Session: session_id and four
        coroutines with its parameters."""
        s = SidecarSession(Sidecar("http://127.0.0.1:1"), "alice", "chat-1")
        self.assertEqual(s.session_id, "chat-1")
        want = {"get_items": ["limit"], "add_items": ["items"], "pop_item": [], "clear_session": []}
        for name, params in want.items():
            fn = getattr(s, name)
            self.assertTrue(inspect.iscoroutinefunction(fn), name)
            self.assertEqual(list(inspect.signature(fn).parameters), params, name)
        self.assertIsNone(inspect.signature(s.get_items).parameters["limit"].default)
        self.assertEqual(FORMAT, "openai.responses")


@unittest.skipUnless(URL and has_route("POST", MESSAGES) and has_route("POST", MESSAGES + "/pop"),
                     "the sidecar serves no %s yet" % MESSAGES)
class Live(unittest.TestCase):
    def test_round_trip(self):
        sc = Sidecar(URL)
        self.addCleanup(sc.close)
        session = SidecarSession(sc, unique("py-agents"), "chat-1")
        items = [
            {"role": "user", "content": "Where is the dog? 🐕"},
            {"type": "function_call", "call_id": "c1", "name": "look", "arguments": "{\"where\": \"garden\"}"},
            {"type": "function_call_output", "call_id": "c1", "output": "in the garden"},
            {"role": "assistant", "content": [{"type": "output_text", "text": "In the garden.", "annotations": []}]},
        ]

        async def run():
            await session.add_items(items[:2])
            await session.add_items(items[2:])
            self.assertEqual(await session.get_items(), items)
            self.assertEqual(await session.get_items(limit=2), items[2:])
            self.assertEqual(await session.pop_item(), items[3])
            self.assertEqual(await session.get_items(), items[:3])
            await session.clear_session()
            self.assertEqual(await session.get_items(), [])
            self.assertIsNone(await session.pop_item())

        asyncio.run(run())
