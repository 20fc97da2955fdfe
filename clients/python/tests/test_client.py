"""Every operation of the served document, called live and checked."""

import base64
import datetime
import re
import threading
import unittest

from agentsidecar import Conflict, LockHeld, LockLost, NotFound, Sidecar, SidecarError

from .support import URL, has_route, operations, recording, snake, template_regex, unique


class EveryOperation(unittest.TestCase):
    def test_every_operation_has_a_method(self):
        for op_id, method, template in operations():
            with self.subTest(op=op_id):
                self.assertTrue(callable(getattr(Sidecar, snake(op_id), None)), "Sidecar has no %s (%s %s)" % (snake(op_id), method, template))

    def test_every_operation(self):
        sc = Sidecar(URL)
        sent = recording(sc)
        u, s = unique("py-every"), "s1"

        # Entries.
        e = sc.append_entry(u, s, "Where is the dog?", "In the garden", qa_id="q1", memify_metadata={"a": True})
        self.assertTrue(e.created)
        self.assertEqual((e["qa_id"], e["context"], e["feedback_score"], e["memify_metadata"]), ("q1", "", None, {"a": True}))
        datetime.datetime.fromisoformat(e["time"][:26] + e["time"][-6:])
        again = sc.append_entry(u, s, "other", "other", qa_id="q1")
        self.assertFalse(again.created)
        self.assertEqual(again["question"], "Where is the dog?")
        gen = sc.append_entry(u, s, "And the cat?", "On the roof")
        self.assertTrue(gen.created)
        self.assertEqual(len(gen["qa_id"]), 36, "the client picks a UUID qa_id")
        self.assertEqual([x["qa_id"] for x in sc.list_entries(u, s)], ["q1", gen["qa_id"]])
        self.assertEqual([x["qa_id"] for x in sc.list_entries(u, s, last_n=1)], [gen["qa_id"]])
        self.assertEqual(sc.list_entries(u, "unknown"), [])
        self.assertEqual(sc.get_entry(u, s, "q1")["answer"], "In the garden")
        e = sc.update_entry(u, s, "q1", answer="Under the tree", used_graph_element_ids={"node_ids": ["n1"]},
                            used_session_context_ids=["pref-1"], memify_metadata={"b": True})
        self.assertEqual(e["answer"], "Under the tree")
        self.assertEqual(e["used_graph_element_ids"], {"node_ids": ["n1"]})
        self.assertEqual(e["memify_metadata"], {"a": True, "b": True})
        e = sc.update_entry(u, s, "q1", used_graph_element_ids=None, memify_metadata=None)
        self.assertIsNone(e["used_graph_element_ids"])
        self.assertIsNone(e["memify_metadata"])
        self.assertEqual(e["used_session_context_ids"], ["pref-1"])
        e = sc.set_feedback(u, s, "q1", feedback_score=4)
        self.assertEqual((e["feedback_score"], e["feedback_text"]), (4, None))
        e = sc.set_feedback(u, s, "q1", feedback_text="good", feedback_score=None)
        self.assertEqual((e["feedback_score"], e["feedback_text"]), (None, "good"))
        e = sc.clear_feedback(u, s, "q1")
        self.assertEqual((e["feedback_score"], e["feedback_text"]), (None, None))
        self.assertEqual([x["qa_id"] for x in sc.search_entries(u, s, "TREE dog")], ["q1"])
        self.assertEqual([x["qa_id"] for x in sc.search_entries(u, s, "the", limit=1)], [gen["qa_id"]])

        # Traces.
        tr = sc.append_trace(u, s, "search_graph", " ok ", method_params={"top_k": 5}, method_return_value=["a", 1])
        self.assertEqual((tr["status"], tr["method_params"]), ("ok", {"top_k": 5}))
        self.assertEqual([x["trace_id"] for x in sc.list_traces(u, s)], [tr["trace_id"]])
        sc.append_trace(u, s, "answer", "error", trace_id="t2", error_message="boom")
        self.assertEqual([x["error_message"] for x in sc.list_traces(u, s, last_n=1)], ["boom"])

        # Context.
        c = sc.append_context(u, s, {"id": "pref-1", "text": "metric units"})
        self.assertTrue(c.created)
        c = sc.append_context(u, s, {"id": "pref-1", "text": "other"})
        self.assertFalse(c.created)
        self.assertEqual(c["text"], "metric units")
        c = sc.append_context(u, s, {"n": 1})
        self.assertTrue(c.created)
        self.assertEqual(len(c["id"]), 36)
        self.assertEqual([x["id"] for x in sc.list_context(u, s)], ["pref-1", c["id"]])
        self.assertEqual(sc.update_context(u, s, "pref-1", {"text": "imperial", "k": "v"}),
                         {"id": "pref-1", "text": "imperial", "k": "v"})
        sc.delete_context(u, s, "pref-1")
        with self.assertRaises(NotFound):
            sc.delete_context(u, s, "pref-1")

        # TTL.
        self.assertGreater(sc.get_session_ttl(u, s)["ttl_seconds"], 0)
        self.assertEqual(sc.set_session_ttl(u, s, 3600), {"ttl_seconds": 3600})
        self.assertEqual(sc.set_session_ttl(u, s, 0), {"ttl_seconds": -1})

        # Usage and lifecycle.
        r = sc.record_usage(u, s, "py-every-model", tokens_in=10, output_text="12345678", cost_usd=0.25, idempotency_key="k1")
        self.assertTrue(r.created)
        self.assertEqual((r["cost_source"], r["cost_usd"], r["tokens_in"], r["tokens_out"], r["tokens_estimated"]),
                         ("explicit", 0.25, 10, 2, True))
        self.assertEqual(sent[-1][2].get("Idempotency-Key"), "k1")
        r = sc.record_usage(u, s, "py-every-model", idempotency_key="k1")
        self.assertFalse(r.created)
        self.assertEqual(r["cost_usd"], 0.25)
        r = sc.record_usage(u, s, "py-every-model", error=True)
        self.assertTrue(r.created and r["error"])
        self.assertRegex(sent[-1][2].get("Idempotency-Key", ""), "^[0-9a-f-]{36}$", "every usage post carries a key")
        rec = sc.get_session(u, s)
        self.assertEqual((rec["status"], rec["entry_count"], rec["calls"], rec["error_count"], rec["tokens_in"], rec["ttl_seconds"]),
                         ("running", 2, 2, 1, 10, -1))
        self.assertEqual(rec["models"]["py-every-model"]["cost_usd"], 0.25)
        page = sc.list_user_sessions(u)
        self.assertEqual([x["session_id"] for x in page["sessions"]], [s])
        self.assertFalse(page["next_cursor"])
        self.assertEqual(sc.list_user_sessions(u, status="completed")["sessions"], [])
        self.assertIn(u, [x["user_id"] for x in sc.list_sessions(limit=500)["sessions"]])
        self.assertIn(u, [x["user_id"] for x in sc.iter_sessions(limit=1)])
        stats = sc.get_session_stats()
        self.assertGreaterEqual(stats["sessions"]["total"], 1)
        self.assertGreaterEqual(stats["calls"], 2)
        models = {m["model"]: m for m in sc.get_cost_by_model()["models"]}
        self.assertGreaterEqual(models["py-every-model"]["calls"], 2)
        self.assertIn("py-every-model", [m["model"] for m in sc.get_cost_by_model(days=1)["models"]])
        self.assertEqual(sc.fail_session(u, s)["status"], "failed")
        self.assertEqual(sc.fail_session(u, s)["status"], "failed")
        with self.assertRaises(Conflict) as cm:
            sc.complete_session(u, s)
        self.assertEqual((cm.exception.status, cm.exception.code), (409, "session_ended"))

        # Registry.
        cs = sc.create_session(u, title="t", metadata={"repo": "r"}, idempotency_key="c1")
        self.assertTrue(cs.created)
        self.assertEqual((len(cs["session_id"]), cs["title"], cs["metadata"]), (36, "t", {"repo": "r"}))
        again = sc.create_session(u, idempotency_key="c1")
        self.assertFalse(again.created)
        self.assertEqual(again["session_id"], cs["session_id"])
        with self.assertRaises(Conflict) as cm:
            sc.create_session(u, session_id=cs["session_id"])
        self.assertEqual(cm.exception.code, "session_exists")
        up = sc.update_session(u, cs["session_id"], title=None, metadata={"repo": None, "pr": "42"})
        self.assertEqual((up["title"], up["metadata"]), (None, {"pr": "42"}))
        self.assertEqual([x["session_id"] for x in sc.iter_user_sessions(u, metadata={"pr": "42"})], [cs["session_id"]])
        done = sc.complete_session(u, cs["session_id"], summary="done")
        self.assertEqual((done["summary"], done["end_reason"]), ("done", "completed"))
        sc.delete_session(u, cs["session_id"])
        st = sc.start_session(u, match={"agent": "a"})
        self.assertTrue(st.created and st["is_new"])
        again = sc.start_session(u, match={"agent": "a"})
        self.assertFalse(again.created or again["is_new"])
        self.assertEqual(again["session_id"], st["session_id"])
        ended = sc.end_active_session(u, summary="s", match={"agent": "a"})
        self.assertEqual((ended["session_id"], ended["end_reason"]), (st["session_id"], "completed"))
        with self.assertRaises(NotFound):
            sc.end_active_session(u, match={"agent": "a"})
        self.assertEqual(sc.patch_session_state(u, st["session_id"], {"a": 1, "b": None}), {"a": 1})
        self.assertEqual(sc.get_session_state(u, st["session_id"]), {"a": 1})
        self.assertEqual(sc.patch_user_state(u, {"lang": "fr"}), {"lang": "fr"})
        self.assertEqual(sc.get_user_state(u), {"lang": "fr"})
        sc.delete_session(u, st["session_id"])

        # Deletes.
        sc.delete_entry(u, s, "q1")
        with self.assertRaises(NotFound):
            sc.delete_entry(u, s, "q1")
        sc.delete_session(u, s)
        with self.assertRaises(NotFound):
            sc.get_session(u, s)

        # Erasure: another user, erased whole; its writes refused a while after.
        eu = u + "-erased"
        sc.append_entry(eu, "s1", "q", "a")
        self.assertEqual(sc.erase_user(eu), {"erased": True})
        with self.assertRaises(Conflict) as cm:
            sc.append_entry(eu, "s1", "q", "a")
        self.assertEqual(cm.exception.code, "user_erasing")

        # Locks.
        name = unique("py-every-lock")
        g = sc.acquire_lock(name, owner="me", ttl_ms=5000)
        self.assertEqual((len(g["token"]), g["owner"], g["ttl_ms"]), (32, "me", 5000))
        self.assertGreaterEqual(g["fencing_token"], 1)
        info = sc.inspect_lock(name)
        self.assertEqual((info["held"], info["owner"], info["fencing_token"]), (True, "me", g["fencing_token"]))
        self.assertEqual(sc.refresh_lock(name, g["token"], ttl_ms=8000)["ttl_ms"], 8000)
        with self.assertRaises(LockHeld):
            sc.acquire_lock(name, wait_ms=10)
        with self.assertRaises(Conflict) as cm:
            sc.release_lock(name, "0" * 32)
        self.assertEqual(cm.exception.code, "not_owner")
        sc.release_lock(name, g["token"])
        with self.assertRaises(NotFound) as cm:
            sc.release_lock(name, g["token"])
        self.assertEqual(cm.exception.code, "not_held")
        with self.assertRaises(LockLost):
            sc.refresh_lock(name, g["token"])
        self.assertEqual(sc.inspect_lock(name), {"held": False})

        # LangGraph checkpoints: a write may come before its checkpoint.
        data = base64.b64encode(b'{"v":4}').decode()
        w = {"checkpoint_id": "c1", "task_id": "t1", "writes": [{"idx": 0, "channel": "x", "type": "json", "data": data}]}
        self.assertEqual(sc.put_checkpoint_writes(u, "thread-1", w), {"stored": 1})
        self.assertEqual(sc.put_checkpoint_writes(u, "thread-1", w), {"stored": 0}, "a retry stores it once")
        ref = sc.put_checkpoint(u, "thread-1", {"checkpoint_id": "c1", "checkpoint": {"type": "json", "data": data},
                                                "metadata": {"source": "input", "step": -1},
                                                "channel_versions": {"x": "1"},
                                                "channel_values": [{"channel": "x", "version": "1", "type": "json", "data": data}]})
        self.assertEqual(ref, {"checkpoint_ns": "", "checkpoint_id": "c1"})
        t = sc.get_checkpoint_tuple(u, "thread-1")
        self.assertEqual((t["checkpoint_id"], t["metadata"], len(t["channel_values"]), t["pending_writes"][0]["task_id"]),
                         ("c1", {"source": "input", "step": -1}, 1, "t1"))
        with self.assertRaises(NotFound):
            sc.get_checkpoint_tuple(u, "thread-1", checkpoint_id="nope")
        page = sc.list_checkpoints(u, "thread-1", filter={"source": "input"}, limit=5)
        self.assertEqual(([c["checkpoint_id"] for c in page["checkpoints"]], page["next_before"]), (["c1"], None))
        self.assertEqual(sc.list_checkpoints(u, "thread-1", checkpoint_ns="child")["checkpoints"], [])

        # Every operation of the document was sent (those of messages and
        # events are called by their own suites).
        sent_paths = {(m, p) for m, p, _ in sent}
        for op_id, method, template in operations():
            if template == "/v1/users/{user_id}/search" or any(m in template for m in ("/messages", "/compactions", "/fork", "/split", "/events", "/abort", "/blocks", "/system-prompt", "/tools")):
                continue  # called by test_messages and test_events
            if template.startswith("/v1/adk/"):
                continue  # test_adk_operations
            with self.subTest(op=op_id):
                rx = template_regex(template)
                self.assertTrue(any(m == method and rx.match(p) for m, p in sent_paths), "%s (%s %s) was not called" % (op_id, method, template))


    def test_adk_operations(self):
        if not has_route("POST", "/v1/adk/apps/{app_name}/users/{user_id}/sessions"):
            self.skipTest("the sidecar serves no ADK sessions")
        sc = Sidecar(URL)
        sent = recording(sc)
        app, u = unique("py-app"), unique("py-adk")
        s = sc.create_adk_session(app, u, "s1", {"a": 1, "user:b": 2, "temp:c": 3})
        self.assertEqual((s["id"], s["state"], s["events"], s["next_cursor"]), ("s1", {"a": 1, "user:b": 2}, [], None))
        with self.assertRaises(Conflict):
            sc.create_adk_session(app, u, "s1")
        t = s["last_update_time"] + 1
        got = sc.append_adk_event(app, u, "s1", {"id": "e1", "timestamp": t}, s["last_update_time"], {"a": 5, "app:z": True})
        self.assertEqual(got, {"index": 0, "replaced": False, "last_update_time": t})
        with self.assertRaises(Conflict) as cm:
            sc.append_adk_event(app, u, "s1", {"id": "e2", "timestamp": t + 1}, t - 1)
        self.assertEqual(cm.exception.code, "stale_session")
        g = sc.get_adk_session(app, u, "s1", num_recent_events=5, limit=10)
        self.assertEqual((g["state"], g["events"]), ({"a": 5, "app:z": True, "user:b": 2}, [{"id": "e1", "timestamp": t}]))
        page = sc.list_adk_sessions(app, u, limit=1, order="desc")
        self.assertEqual(([x["id"] for x in page["sessions"]], page["total_items"]), (["s1"], 1))
        every = sc.list_adk_app_sessions(app, order="asc")
        self.assertEqual(([(x["user_id"], x["id"], x["sidecar_session_id"]) for x in every["sessions"]], every["next_cursor"]),
                         ([(u, "s1", app + ".s1")], None))
        sc.delete_adk_session(app, u, "s1")
        with self.assertRaises(NotFound):
            sc.get_adk_session(app, u, "s1")
        sent_paths = {(m, p) for m, p, _ in sent}
        for op_id, method, template in operations():
            if template.startswith("/v1/adk/"):
                rx = template_regex(template)
                self.assertTrue(any(m == method and rx.match(p) for m, p in sent_paths), "%s (%s %s) was not called" % (op_id, method, template))


class Threads(unittest.TestCase):
    def test_one_client_many_threads(self):
        """One Sidecar shared by 16 threads: every append stored once, every
        thread sees its own answers, connections are reused."""
        sc = Sidecar(URL)
        u, s = unique("py-threads"), "s1"
        errors = []

        def work(n):
            try:
                for i in range(10):
                    e = sc.append_entry(u, s, "q%d-%d" % (n, i), "a", qa_id="t%d-%d" % (n, i))
                    assert e["qa_id"] == "t%d-%d" % (n, i) and e.created, e
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(sc.get_session(u, s)["entry_count"], 160)
        self.assertLessEqual(len(sc._t._idle), 16)
        sc.close()


class Wire(unittest.TestCase):
    def test_headers_and_ids(self):
        sc = Sidecar(URL + "/", user_agent="my-agent/1.0")
        sent = recording(sc)
        with self.assertRaises(SidecarError) as cm:
            sc.get_entry("py-wire", "a b", "q")  # a space is no id: 400, sent escaped
        self.assertEqual((cm.exception.status, cm.exception.code), (400, "invalid_id"))
        self.assertEqual(sent[-1][1], "/v1/users/py-wire/sessions/a%20b/entries/q")
        self.assertEqual(sent[-1][2]["User-Agent"], "my-agent/1.0")
        self.assertNotIn("Authorization", sent[-1][2])
        self.assertNotIn("Content-Type", sent[-1][2])
        from agentsidecar import BadID

        for bad in ("", ".", ".."):
            with self.assertRaises(BadID):
                sc.get_entry("py-wire", bad, "q")
        self.assertEqual(len(sent), 1, "bad ids are refused before anything is sent")
        self.assertTrue(re.match(r"^/v1/", sent[0][1]))
        self.assertFalse(has_route("GET", "/v1/nothing"))


if __name__ == "__main__":
    unittest.main()
