"""Turns too big for one request: SidecarSession.add_items sends them as
one append_items operation in parts, staged by the sidecar until the last
part and then visible at once; get_items answers every item byte for byte."""

import asyncio
import json
import unittest

from agentsidecar import Sidecar
from agentsidecar.errors import Conflict
from agentsidecar.openai_agents import SidecarSession

from .support import URL, has_route, unique

TX = "/v1/users/{user_id}/sessions/{session_id}/messages/transactions"


def _item(i, output=None):
    """Item i of a tool loop, as the Python SDK holds it: a question, a
    call, its output, an answer."""
    k = i % 4
    if k == 0:
        return {"role": "user", "content": "question %d \u2602" % i}
    if k == 1:
        return {"type": "function_call", "call_id": "c%d" % i, "name": "read_file",
                "arguments": '{"n": %d}' % i, "status": "completed"}
    if k == 2:
        return {"type": "function_call_output", "call_id": "c%d" % (i - 1),
                "output": "result %d" % i if output is None else output}
    return {"type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": "answer %d" % i, "annotations": []}]}


def _watch(sc, before=None):
    """Record each transaction part sc sends (part, more, count, status),
    running before(body, attempt) before it is sent."""
    parts, seen = [], {}
    t = sc._t
    once = t._once

    def send(method, target, data, headers, safe, timeout):
        if method != "POST" or not target.split("?")[0].endswith("/messages/transactions"):
            return once(method, target, data, headers, safe, timeout)
        body = json.loads(data)
        attempt = seen[body["part"]] = seen.get(body["part"], 0) + 1
        if before:
            before(body, attempt)
        status, hdrs, raw = once(method, target, data, headers, safe, timeout)
        parts.append({"part": body["part"], "more": body["more"], "count": len(body["messages"]), "status": status})
        return status, hdrs, raw

    t._once = send
    return parts


@unittest.skipUnless(URL and has_route("POST", TX), "the sidecar serves no %s yet" % TX)
class Parts(unittest.TestCase):
    def setUp(self):
        self.sc = Sidecar(URL)
        self.addCleanup(self.sc.close)

    def items_of(self, user):
        """The session's items as another process reads them."""
        return asyncio.run(SidecarSession(self.sc, user, "chat").get_items())

    def same_json(self, got, want):
        self.assertEqual(len(got), len(want))
        for i, (g, w) in enumerate(zip(got, want)):
            self.assertEqual(json.dumps(g), json.dumps(w), "item %d" % i)

    def test_5000_small_items(self):
        items = [_item(i) for i in range(5000)]
        user = unique("py-parts")
        sc = Sidecar(URL)
        self.addCleanup(sc.close)
        visible = []

        def before(body, attempt):
            if not body["more"]:
                visible.append(len(self.sc.list_messages(user, "chat", limit=1, compacted=False)["messages"]))

        parts = _watch(sc, before)
        asyncio.run(SidecarSession(sc, user, "chat").add_items(items))
        self.assertEqual([(p["part"], p["more"], p["count"], p["status"]) for p in parts],
                         [(i, i < 49, 100, 202 if i < 49 else 201) for i in range(50)])
        self.assertEqual(visible, [0], "staged parts are not visible before the last one")
        got = self.items_of(user)
        self.same_json(got, items)
        self.assertEqual(got, items)

    def test_30_mib(self):
        """60 tool outputs of 512 KiB, after an earlier small turn."""
        pad = "abcdefghij<&>\"\\\n\u00e9"
        big = [_item(2, ("%d:" % i + pad * (512 * 1024 // len(pad)))[: 512 * 1024]) for i in range(60)]
        user = unique("py-parts")
        sc = Sidecar(URL)
        self.addCleanup(sc.close)
        parts = _watch(sc)
        s = SidecarSession(sc, user, "chat")
        asyncio.run(s.add_items([_item(0)]))
        self.assertEqual(parts, [], "a small turn is one append, as before")
        asyncio.run(s.add_items(big))
        self.assertEqual([(p["part"], p["count"]) for p in parts], [(i, 1) for i in range(60)])
        self.same_json(self.items_of(user), [_item(0)] + big)

    def test_lost_parts_start_again(self):
        """The session deleted after part 0 was staged: the sidecar drops
        the stage, part 1 is refused (409 part_missing) and add_items sends
        the operation again from part 0."""
        items = [_item(i) for i in range(1050)]
        user = unique("py-parts")
        sc = Sidecar(URL)
        self.addCleanup(sc.close)

        def before(body, attempt):
            if body["part"] == 1 and attempt == 1:
                self.sc.delete_session(user, "chat")

        parts = _watch(sc, before)
        asyncio.run(SidecarSession(sc, user, "chat").add_items(items))
        self.assertEqual([(p["part"], p["status"]) for p in parts],
                         [(0, 202), (1, 409)] + [(i, 202 if i < 10 else 201) for i in range(11)])
        self.same_json(self.items_of(user), items)

    def test_session_full_refused_whole(self):
        user = unique("py-parts")
        s = SidecarSession(self.sc, user, "chat")
        asyncio.run(s.add_items([_item(0)]))
        with self.assertRaises(Conflict) as cm:
            asyncio.run(s.add_items([_item(i + 1) for i in range(10000)]))
        self.assertEqual(cm.exception.code, "session_full")
        self.assertIn("SESSION_MAX_MESSAGES", cm.exception.message)
        self.same_json(self.items_of(user), [_item(0)])


if __name__ == "__main__":
    unittest.main()
