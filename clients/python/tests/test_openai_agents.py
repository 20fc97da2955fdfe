"""SidecarSession: the OpenAI Agents SDK's Session protocol by shape, and
over the live messages API once the sidecar serves it."""

import asyncio
import inspect
import threading
import unittest

from agentsidecar import Sidecar
from agentsidecar.errors import Conflict
from agentsidecar.openai_agents import FORMAT, SidecarSession

from .support import URL, has_route, unique

MESSAGES = "/v1/users/{user_id}/sessions/{session_id}/messages"
COMPACTIONS = "/v1/users/{user_id}/sessions/{session_id}/compactions"


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


class Settings:
    """The SDK's SessionSettings by shape: a ``limit`` (None: every item)."""

    def __init__(self, limit=None):
        self.limit = limit


class Protocol(unittest.TestCase):
    def test_shape(self):
        """The protocol of agents.memory.Session: session_id and four
        coroutines with its parameters."""
        s = SidecarSession(Sidecar("http://127.0.0.1:1"), "alice", "chat-1")
        self.assertEqual(s.session_id, "chat-1")
        want = {"get_items": ["limit", "wrapper"], "add_items": ["items", "wrapper"], "pop_item": ["wrapper"],
                "clear_session": ["wrapper"], "run_compaction": ["args", "wrapper"]}
        for name, params in want.items():
            fn = getattr(s, name)
            self.assertTrue(inspect.iscoroutinefunction(fn), name)
            self.assertEqual(list(inspect.signature(fn).parameters), params, name)
            # the SDK's _session_method_accepts_wrapper: a parameter named
            # wrapper, passable by keyword; every history call has it, so
            # the runner passes its RunContextWrapper to each
            self.assertEqual(inspect.signature(fn).parameters["wrapper"].kind, inspect.Parameter.KEYWORD_ONLY, name)
            self.assertIsNone(inspect.signature(fn).parameters["wrapper"].default, name)
        self.assertIsNone(inspect.signature(s.get_items).parameters["limit"].default)
        self.assertEqual(FORMAT, "openai.responses")
        # the SDK's is_openai_responses_compaction_aware_session: a callable run_compaction
        self.assertTrue(callable(getattr(s, "run_compaction", None)))
        self.assertIsNone(asyncio.run(s.run_compaction()), "no compact function: nothing to do, nothing sent")

    def test_session_settings(self):
        """The protocol's optional session_settings: None unless given, by
        keyword, as the SDK's own sessions take it."""
        sc = Sidecar("http://127.0.0.1:1")
        self.assertIsNone(SidecarSession.session_settings)
        self.assertIsNone(SidecarSession(sc, "alice", "chat-1").session_settings)
        settings = Settings(limit=3)
        self.assertIs(SidecarSession(sc, "alice", "chat-1", session_settings=settings).session_settings, settings)
        self.assertEqual(inspect.signature(SidecarSession).parameters["session_settings"].kind,
                         inspect.Parameter.KEYWORD_ONLY)


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

    def test_replace_history_is_one_transaction(self):
        """replace_history (run_compaction's write) swaps the whole history
        at once: a reader on another connection sees the 150 items or the
        compacted 3, never an empty or a half-written session."""
        sc, reader_sc = Sidecar(URL), Sidecar(URL)
        self.addCleanup(sc.close)
        self.addCleanup(reader_sc.close)
        user = unique("py-replace")
        session, reader = SidecarSession(sc, user, "chat-1"), SidecarSession(reader_sc, user, "chat-1")
        before = [{"role": "user", "content": "q%d" % i} for i in range(150)]
        after = [{"type": "compaction", "encrypted_content": "summary"}, before[-2], before[-1]]
        asyncio.run(session.add_items(before))
        seen, done = set(), threading.Event()

        def read():
            while not done.is_set():
                seen.add(len(asyncio.run(reader.get_items())))

        t = threading.Thread(target=read)
        t.start()
        try:
            asyncio.run(session.replace_history(after))
        finally:
            done.set()
            t.join()
        self.assertEqual(asyncio.run(reader.get_items()), after)
        self.assertTrue(seen <= {150, 3}, seen)

    def test_run_compaction(self):
        """run_compaction runs the compact function given (a function or a
        coroutine function) on the whole history, with the runner's args and
        wrapper, and replaces the history with its answer; None skips."""
        sc = Sidecar(URL)
        self.addCleanup(sc.close)
        calls = []

        def compact(items, args, wrapper):
            calls.append((len(items), args, wrapper))
            if len(items) < 3:
                return None
            return [{"type": "compaction", "encrypted_content": "of %d" % len(items)}, items[-1]]

        async def acompact(items, args, wrapper):
            return compact(items, args, wrapper)

        for fn in (compact, acompact):
            with self.subTest(fn=fn.__name__):
                calls.clear()
                s = SidecarSession(sc, unique("py-compact"), "chat-1", compact=fn)
                items = [{"role": "user", "content": "q%d" % i} for i in range(3)]
                asyncio.run(s.add_items(items[:2], wrapper="w"))
                asyncio.run(s.run_compaction({"response_id": "r1"}, wrapper="w"))
                self.assertEqual(asyncio.run(s.get_items(wrapper="w")), items[:2], "skipped: unchanged")
                asyncio.run(s.add_items(items[2:]))
                asyncio.run(s.run_compaction())
                self.assertEqual(calls, [(2, {"response_id": "r1"}, "w"), (3, None, None)])
                self.assertEqual(asyncio.run(s.get_items()), [{"type": "compaction", "encrypted_content": "of 3"}, items[2]])

    def test_compaction_never_erases_a_later_turn(self):
        """run_compaction replaces the history only while its latest message
        is the last one read: another pod's turn appended while compact ran
        stays, nothing replaced; replace_history(expected_leaf=) refuses
        with Conflict suffix_mismatch."""
        sc = Sidecar(URL)
        self.addCleanup(sc.close)
        user = unique("py-compact-race")
        other = SidecarSession(sc, user, "chat-1")
        items = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
        late = {"role": "user", "content": "late"}

        async def compact(read, args, wrapper):
            await other.add_items([late])  # another pod, mid-compaction
            return [{"type": "compaction", "encrypted_content": "of %d" % len(read)}]

        s = SidecarSession(sc, user, "chat-1", compact=compact)
        asyncio.run(s.add_items(items))
        asyncio.run(s.run_compaction())
        self.assertEqual(asyncio.run(other.get_items()), items + [late], "nothing replaced")
        with self.assertRaises(Conflict) as cm:
            asyncio.run(s.replace_history([], expected_leaf="nope"))
        self.assertEqual(cm.exception.code, "suffix_mismatch")
        self.assertEqual(asyncio.run(other.get_items()), items + [late])
        # nothing in between: applied
        done = [{"type": "compaction", "encrypted_content": "all"}]
        asyncio.run(SidecarSession(sc, user, "chat-1", compact=lambda read, args, wrapper: done).run_compaction())
        self.assertEqual(asyncio.run(other.get_items()), done)

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

    def test_session_settings_limit(self):
        """get_items() without a limit reads session_settings.limit, as the
        SDK's sessions resolve it; a limit given wins, None reads all."""
        sc = Sidecar(URL)
        self.addCleanup(sc.close)
        user = unique("py-settings")
        items = [{"role": "user", "content": "q%d" % i} for i in range(5)]
        asyncio.run(SidecarSession(sc, user, "chat-1").add_items(items))
        cases = [(Settings(2), None, items[-2:]), (Settings(2), 4, items[-4:]), (Settings(2), 0, []),
                 (Settings(0), None, []), (Settings(None), None, items), (Settings(9), None, items),
                 ({"limit": 3}, None, items[-3:]), ({}, None, items), (None, None, items), (None, 1, items[-1:])]
        for settings, limit, want in cases:
            with self.subTest(settings=getattr(settings, "limit", settings), limit=limit):
                s = SidecarSession(sc, user, "chat-1", session_settings=settings)
                self.assertEqual(asyncio.run(s.get_items(limit)), want)
                if limit is None:
                    self.assertEqual(asyncio.run(s.get_items()), want)


@unittest.skipUnless(URL and has_route("POST", MESSAGES + "/pop") and has_route("POST", COMPACTIONS),
                     "the sidecar serves no %s yet" % COMPACTIONS)
class Overlays(unittest.TestCase):
    """A compaction overlay made through the API (for other readers) never
    shows in the SDK's view: get_items reads the raw path, so it answers as
    the reference does, and pop_item removes exactly the newest item it
    showed."""

    def test_overlay_stays_out_of_the_sdk_view(self):
        sc = Sidecar(URL)
        self.addCleanup(sc.close)
        u, s = unique("py-overlay"), "chat-1"
        ours, ref = SidecarSession(sc, u, s), ListSession()
        items = [{"role": "user", "content": "Where is the dog?"}, _call("c1", 10), _output("c1", 10),
                 _say("In the garden."), {"role": "user", "content": "And the cat?"}, _say("On the roof.")]

        def raw():
            return [m["id"] for m in sc.list_messages(u, s, compacted=False, limit=1000)["messages"]]

        def read():
            return [m["id"] for m in sc.list_messages(u, s, limit=1000)["messages"]]

        def in_force():
            return [c["id"] for c in sc.list_compactions(u, s)["compactions"]]

        async def both(step):
            got = await step(ours)
            self.assertEqual(got, await step(ref))
            return got

        async def run():
            await both(lambda x: x.add_items(items))
            ids = raw()
            self.assertEqual(len(ids), len(items))
            a = sc.create_compaction(u, s, "The dog is in the garden.", ids[0], ids[3])["id"]
            self.assertEqual(read(), ["compaction:" + a, ids[4], ids[5]], "the overlay is in force for other readers")

            self.assertEqual(await both(lambda x: x.get_items()), items)
            for limit in (3, 5, 10):
                await both(lambda x: x.get_items(limit))
            self.assertEqual(await both(lambda x: x.pop_item()), items[5])
            self.assertEqual(in_force(), [a], "a pop after the range keeps the overlay")
            self.assertEqual(read(), ["compaction:" + a, ids[4]])
            self.assertEqual(await both(lambda x: x.get_items()), items[:5])

            # an overlay ending at the newest item: the pop answers that item
            # (the one get_items showed, not the summary); the overlay ends with it
            b = sc.create_compaction(u, s, "Asked about the cat.", ids[4], ids[4])["id"]
            self.assertEqual(read(), ["compaction:" + a, "compaction:" + b])
            self.assertEqual(await both(lambda x: x.get_items(1)), [items[4]])
            self.assertEqual(await both(lambda x: x.pop_item()), items[4])
            self.assertEqual(in_force(), [a])
            self.assertEqual(read(), ["compaction:" + a])
            self.assertEqual(await both(lambda x: x.get_items()), items[:4])

            # popping the older overlay's endpoint ends it too; the rest stays raw
            self.assertEqual(await both(lambda x: x.pop_item()), items[3])
            self.assertEqual(in_force(), [])
            self.assertEqual(read(), ids[:3])
            await both(lambda x: x.add_items([_say("Still in the garden.")]))
            await both(lambda x: x.get_items())
            await both(lambda x: x.get_items(2))
            await both(lambda x: x.clear_session())
            await both(lambda x: x.get_items())
            await both(lambda x: x.pop_item())

        asyncio.run(run())


def _call(call_id, size):
    return {"type": "function_call", "call_id": call_id, "name": "read_file",
            "arguments": '{"size": %d}' % size, "status": "completed"}


def _output(call_id, size):
    return {"type": "function_call_output", "call_id": call_id, "output": "f" * size}


def _say(text):
    return {"type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def _turn(calls, size):
    """One turn of the SDK's Runner as its session sees it: the user's
    message, the model's parallel tool calls, their outputs, the answer."""
    ids = ["c%d" % i for i in range(calls)]
    return ([{"role": "user", "content": "go"}] + [_call(i, size) for i in ids]
            + [_output(i, size) for i in ids] + [_say("done")])


@unittest.skipUnless(URL and has_route("POST", MESSAGES), "the sidecar serves no %s yet" % MESSAGES)
class Sizes(unittest.TestCase):
    """The sizes a real agent's turns take, each one add_items as the SDK's
    Runner makes it, stored whole and read back exactly."""

    def setUp(self):
        self.sc = Sidecar(URL)
        self.addCleanup(self.sc.close)

    def session(self, name="chat"):
        return SidecarSession(self.sc, unique("py-sizes"), name)

    def same(self, items):
        s = self.session()
        asyncio.run(s.add_items(items))
        # a new object, as another process would make
        again = SidecarSession(self.sc, s.user_id, s.session_id)
        self.assertEqual(asyncio.run(again.get_items()), items)
        return again

    def test_turn_sizes(self):
        loop = [{"role": "user", "content": "go"}]
        for i in range(51):
            loop += [_call("s%d" % i, 50), _output("s%d" % i, 50)]
        loop.append(_say("done"))
        cases = {
            "60 parallel tool calls": _turn(60, 100),
            "a 51-step tool loop": loop,
            "a 300 KiB tool output": _turn(1, 300 * 1024),
            "five 250 KiB outputs": _turn(5, 250 * 1024),
        }
        for name, items in cases.items():
            with self.subTest(name):
                s = self.same(items)
                self.assertEqual(asyncio.run(s.get_items(7)), items[-7:])

    def test_restore_of_150_items(self):
        """What the SDK's compaction session does when its compaction write
        fails: the items it read, put back in one add_items."""
        s = self.session()
        items = [{"role": "user", "content": "q%d" % i} if i % 2 == 0 else _say("a%d" % i) for i in range(150)]
        asyncio.run(s.add_items(items))
        before = asyncio.run(s.get_items())
        asyncio.run(s.clear_session())
        asyncio.run(s.add_items(before))
        self.assertEqual(asyncio.run(s.get_items()), items)

    def test_exact_limit(self):
        s = self.session("many")
        items = [{"role": "user", "content": "m%d" % i} for i in range(1100)]
        asyncio.run(s.add_items(items[:1000]))
        asyncio.run(s.add_items(items[1000:]))
        self.assertEqual(asyncio.run(s.get_items(1050)), items[-1050:])
        self.assertEqual(asyncio.run(s.get_items(2000)), items)
        self.assertEqual(len(asyncio.run(s.get_items())), 1100)
        # 20 items of 240 KiB: 4.7 MiB, past one answer's cap (4 MiB by default)
        big = self.session("big")
        heavy = [{"role": "user", "content": str(i).ljust(240 * 1024, "x")} for i in range(20)]
        asyncio.run(big.add_items(heavy))
        page = self.sc.list_messages(big.user_id, big.session_id, order="desc", limit=20)
        self.assertLess(len(page["messages"]), 20, "one page holds them all: the test does not cross a cut")
        self.assertEqual(asyncio.run(big.get_items(20)), heavy)
        self.assertEqual(asyncio.run(big.get_items(17)), heavy[-17:])
        self.assertEqual(asyncio.run(big.get_items()), heavy)
