"""The messages and blocks calls, live, once the sidecar serves them: each
operation of those families called and checked."""

import unittest

from agentsidecar import Conflict, NotFound, Sidecar

from .support import URL, has_route, operations, recording, template_regex, unique

MESSAGES = "/v1/users/{user_id}/sessions/{session_id}/messages"
BLOCKS = "/v1/users/{user_id}/blocks"


def assert_family_called(tc, sent, marks):
    for op_id, method, template in operations():
        if any(m in template for m in marks):
            rx = template_regex(template)
            tc.assertTrue(any(m == method and rx.match(p) for m, p, _ in sent), "%s (%s %s) was not called" % (op_id, method, template))


@unittest.skipUnless(URL and has_route("POST", MESSAGES), "the sidecar serves no %s yet" % MESSAGES)
class Messages(unittest.TestCase):
    def test_every_messages_operation(self):
        sc = Sidecar(URL)
        self.addCleanup(sc.close)
        sent = recording(sc)
        u, s = unique("py-msgs"), "s1"
        first = sc.append_message(u, s, "user", "Where is the dog?", id="m1")
        self.assertTrue(first.created)
        self.assertEqual((first["id"], first["role"], first["content"]), ("m1", "user", "Where is the dog?"))
        self.assertFalse(sc.append_message(u, s, "user", "Where is the dog?", id="m1").created, "same id, same fields: stored once")
        batch = sc.append_messages(u, s, [{"role": "assistant", "content": "In the garden"}, {"role": "user", "content": "And the cat?"}], if_leaf="m1")
        self.assertEqual([m["role"] for m in batch], ["assistant", "user"])
        self.assertEqual(len(batch[0]["id"]), 36, "the client picks an id")
        page = sc.list_messages(u, s)
        self.assertEqual([m["id"] for m in page["messages"]], ["m1", batch[0]["id"], batch[1]["id"]])
        self.assertEqual(page["total"], 3)
        desc = sc.list_messages(u, s, order="desc", limit=1)
        self.assertEqual([m["id"] for m in desc["messages"]], [batch[1]["id"]])
        self.assertEqual(sc.get_message(u, s, "m1")["content"], "Where is the dog?")
        comp = sc.create_compaction(u, s, "Asked where the dog is.", "m1", batch[0]["id"])
        self.assertEqual((comp["from_id"], comp["to_id"]), ("m1", batch[0]["id"]))
        self.assertEqual([c["id"] for c in sc.list_compactions(u, s)["compactions"]], [comp["id"]])
        self.assertEqual([m["id"] for m in sc.list_messages(u, s)["messages"]], ["compaction:" + comp["id"], batch[1]["id"]])
        self.assertEqual(len(sc.list_messages(u, s, compacted=False)["messages"]), 3)
        fork = sc.fork_session(u, s, batch[0]["id"], new_session_id="s1-fork", idempotency_key="f1")
        self.assertTrue(fork.created)
        self.assertEqual((fork["session_id"], fork["parent_session_id"]), ("s1-fork", s))
        self.assertFalse(sc.fork_session(u, s, batch[0]["id"], new_session_id="s1-fork", idempotency_key="f1").created)
        self.assertEqual([m["id"] for m in sc.list_messages(u, "s1-fork", compacted=False)["messages"]], ["m1", batch[0]["id"]])
        cont = sc.split_session(u, "s1-fork", "Dog in the garden.", new_session_id="s1-cont")
        self.assertEqual((cont["session_id"], cont["parent_session_id"]), ("s1-cont", "s1-fork"))
        self.assertEqual(sc.get_session(u, "s1-fork")["end_reason"], "split")
        self.assertEqual([m["role"] for m in sc.list_messages(u, "s1-cont")["messages"]], ["system"])
        branch = sc.put_message(u, s, "m2b", "assistant", content="Under the tree", parent_id="m1")
        self.assertTrue(branch.created)
        self.assertEqual([m["id"] for m in sc.list_children(u, s, "m1")["messages"]], [batch[0]["id"], "m2b"])
        self.assertEqual(sc.patch_message(u, s, "m2b", content="On the roof")["content"], "On the roof")
        with self.assertRaises(Conflict) as cm:
            sc.delete_message(u, s, "m1")
        self.assertEqual(cm.exception.code, "has_children")
        hits = sc.search_user(u, "gardens")["results"]
        self.assertIn("s1-cont", [h["session_id"] for h in hits], "stemmed: gardens finds the summary's garden")
        self.assertTrue(all(h["kind"] == "message" and h["snippet"] for h in hits))
        self.assertTrue(sc.search_relevant(u, "s1-cont", "garden", limit=5)["results"])
        popped = sc.pop_message(u, s)
        self.assertEqual(popped["id"], "m2b", "the latest leaf is the last appended message")
        sc.delete_message(u, s, "m1", subtree=True)
        with self.assertRaises(NotFound):
            sc.get_message(u, s, "m1")
        sc.append_message(u, s, "user", "again")
        tx = {"operation_id": "op-1", "type": "append_items", "messages": [{"role": "user", "content": "tx"}]}
        applied = sc.apply_message_transaction(u, s, tx)
        self.assertEqual((applied["applied"], [m["content"] for m in applied["messages"]]), (True, ["tx"]))
        self.assertFalse(sc.apply_message_transaction(u, s, tx)["applied"], "a repeat of the operation id")
        with self.assertRaises(Conflict) as cm:
            sc.apply_message_transaction(u, s, dict(tx, messages=[{"role": "user", "content": "other"}]))
        self.assertEqual(cm.exception.code, "operation_conflict")
        sc.clear_messages(u, s)
        self.assertEqual(sc.list_messages(u, s)["messages"], [])
        with self.assertRaises(NotFound):
            sc.pop_message(u, s)
        assert_family_called(self, sent, ["/messages", "/compactions", "/fork", "/split"])


@unittest.skipUnless(URL and has_route("PUT", BLOCKS + "/{label}"), "the sidecar serves no %s yet" % BLOCKS)
class Blocks(unittest.TestCase):
    def test_every_blocks_operation(self):
        sc = Sidecar(URL)
        self.addCleanup(sc.close)
        sent = recording(sc)
        u, s = unique("py-blocks"), "s1"
        b = sc.put_user_block(u, "persona", "You are terse.")
        self.assertTrue(b.created)
        self.assertEqual((b["label"], b["content"]), ("persona", "You are terse."))
        self.assertFalse(sc.put_user_block(u, "persona", "You are terse.").created)
        self.assertEqual(sc.append_user_block(u, "persona", " And kind.")["content"], "You are terse. And kind.")
        self.assertEqual(sc.get_user_block(u, "persona")["content"], "You are terse. And kind.")
        self.assertEqual([x["label"] for x in sc.list_user_blocks(u)["blocks"]], ["persona"])
        self.assertTrue(sc.put_session_block(u, s, "notes", "", max_tokens=100).created)
        self.assertEqual(sc.append_session_block(u, s, "notes", "dog: garden")["content"], "dog: garden")
        self.assertEqual(sc.get_session_block(u, s, "notes")["content"], "dog: garden")
        self.assertEqual(sorted(x["label"] for x in sc.list_session_blocks(u, s)["blocks"]), ["notes", "persona"])
        prompt = sc.get_system_prompt(u, s)
        self.assertIn("PERSONA", prompt["prompt"])
        self.assertIn("dog: garden", prompt["prompt"])
        self.assertIn("prompt", sc.refresh_system_prompt(u, s))
        tools = sc.list_tools(u, s)["tools"]
        self.assertTrue(tools)
        r = sc.call_tool(u, s, "set_context", {"label": "notes", "content": "cat: roof", "action": "append"}, tool_call_id="call-1")
        self.assertFalse(r["is_error"], r)
        self.assertIn("cat: roof", sc.get_session_block(u, s, "notes")["content"])
        sc.delete_session_block(u, s, "notes")
        sc.delete_user_block(u, "persona")
        with self.assertRaises(NotFound):
            sc.get_user_block(u, "persona")
        assert_family_called(self, sent, ["/blocks", "/system-prompt", "/tools"])
