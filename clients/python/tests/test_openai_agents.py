"""SidecarSession: the OpenAI Agents SDK's Session protocol by shape, and
over the live messages API once the sidecar serves it."""

import asyncio
import inspect
import unittest

from agentsidecar import Sidecar
from agentsidecar.openai_agents import FORMAT, SidecarSession

from .support import URL, has_route, unique

MESSAGES = "/v1/users/{user_id}/sessions/{session_id}/messages"


class ListSession:
    """The SDK's session semantics (its SQLiteSession: get_items(limit)
    answers the newest ``limit`` items oldest first, pop_item the newest or
    None), over a list: the reference SidecarSession is compared with."""

    def __init__(self):
        self.items = []

    async def get_items(self, limit=None):
        return list(self.items) if limit is None else (self.items[-limit:] if limit > 0 else [])

    async def add_items(self, items):
        self.items.extend(items)

    async def pop_item(self):
        return self.items.pop() if self.items else None

    async def clear_session(self):
        self.items.clear()


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

    def test_same_answers_as_the_reference(self):
        sc = Sidecar(URL)
        self.addCleanup(sc.close)
        ours, ref = SidecarSession(sc, unique("py-agents"), "chat-1"), ListSession()
        items = [{"role": "user", "content": "q%d" % i} for i in range(5)]
        steps = [
            lambda s: s.get_items(),
            lambda s: s.pop_item(),
            lambda s: s.add_items(items[:3]),
            lambda s: s.add_items([]),
            lambda s: s.get_items(2),
            lambda s: s.get_items(10),
            lambda s: s.pop_item(),
            lambda s: s.add_items(items[3:]),
            lambda s: s.get_items(),
            lambda s: s.get_items(0),
            lambda s: s.clear_session(),
            lambda s: s.get_items(),
            lambda s: s.pop_item(),
        ]

        async def run():
            for i, step in enumerate(steps):
                self.assertEqual(await step(ours), await step(ref), "step %d" % i)

        asyncio.run(run())
