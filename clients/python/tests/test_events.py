"""The event iterator: parsing and reconnecting with Last-Event-ID against
a stand-in stream, then the live stream once the sidecar serves it."""

import http.server
import threading
import unittest

from agentsidecar import Sidecar

from .support import URL, has_route, operations, recording, template_regex, unique

EVENTS = "/v1/users/{user_id}/sessions/{session_id}/events"


class _Stream(http.server.BaseHTTPRequestHandler):
    """Serves the stream in two connections: the first sends retry, a
    keepalive, two events and drops; the second (which must carry
    Last-Event-ID: 2) sends reconnected, event 3 and deleted."""

    protocol_version = "HTTP/1.1"
    seen: list = []

    def do_GET(self):
        type(self).seen.append((self.path, self.headers.get("Last-Event-ID"), self.headers.get("Authorization")))
        if len(type(self).seen) == 1:
            body = (
                "retry: 10\n\n: keepalive\n\n"
                'id: 1\nevent: entry_appended\ndata: {"qa_id":"q1"}\n\n'
                "id: 2\nevent: x-delta\ndata: line one\ndata: line two\n\n"
            )
        else:
            body = (
                'id: 2\nevent: reconnected\ndata: {"gap":false,"oldest_id":"1"}\n\n'
                'id: 3\nevent: entry_appended\ndata: {"qa_id":"q2"}\n\n'
                'id: 4\nevent: deleted\ndata: {}\n\n'
            )
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))  # then the connection ends: a drop
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


class Iterator(unittest.TestCase):
    def test_reconnects_with_last_event_id(self):
        _Stream.seen = []
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Stream)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        sc = Sidecar("http://127.0.0.1:%d" % srv.server_address[1], token="t0k")
        got = [(e.id, e.event, e.data) for e in sc.events("alice", "chat-1")]
        self.assertEqual(got, [
            ("1", "entry_appended", {"qa_id": "q1"}),
            ("2", "x-delta", "line one\nline two"),
            ("2", "reconnected", {"gap": False, "oldest_id": "1"}),
            ("3", "entry_appended", {"qa_id": "q2"}),
            ("4", "deleted", {}),
        ])
        self.assertEqual(_Stream.seen, [
            ("/v1/users/alice/sessions/chat-1/events", None, "Bearer t0k"),
            ("/v1/users/alice/sessions/chat-1/events", "2", "Bearer t0k"),
        ])


@unittest.skipUnless(URL and has_route("GET", EVENTS), "the sidecar serves no %s yet" % EVENTS)
class Live(unittest.TestCase):
    def test_live_stream_resume_abort_user_events(self):
        sc = Sidecar(URL)
        self.addCleanup(sc.close)
        sent = recording(sc)
        u, s = unique("py-events"), "s1"
        sc.append_entry(u, s, "q", "a", qa_id="q1")
        it = sc.get_session_events(u, s, last_event_id="0")
        first = next(e for e in it if e.event != "reconnected")
        self.assertEqual((first.event, first.data.get("qa_id")), ("entry_appended", "q1"))
        it.close()

        # Resume after first: the events written meanwhile, once, in order.
        sc.append_entry(u, s, "q", "a", qa_id="q2")
        pub = sc.publish_session_event(u, s, "x-delta", {"text": "Hel"})
        self.assertIn("id", pub)
        sc.request_abort(u, s)
        sc.clear_abort(u, s)
        it = sc.events(u, s, last_event_id=first.id)
        rec = next(it)
        self.assertEqual(rec.event, "reconnected")
        self.assertFalse(rec.data["gap"])
        got = [next(it) for _ in range(4)]
        self.assertEqual([e.event for e in got], ["entry_appended", "x-delta", "abort", "abort_cleared"])
        self.assertEqual((got[0].data["qa_id"], got[1].data, got[1].id), ("q2", {"text": "Hel"}, pub["id"]))
        sc.delete_session(u, s)
        rest = list(it)
        self.assertEqual(rest[-1].event, "deleted", "the iterator ends after deleted")

        # The user's stream: a user-level write.
        ut = sc.get_user_events(u, last_event_id="0")
        sc.patch_user_state(u, {"lang": "fr"})
        ev = next(e for e in ut if e.event != "reconnected")
        self.assertIn("state_changed", ev.event)
        ut.close()
        # The streams' GETs go on their own connections (read above); the
        # other calls of the family went through the recorded transport.
        for op_id, method, template in operations():
            if (template.endswith("/events") or template.endswith("/abort")) and method != "GET" and not template.startswith("/v1/adk/"):  # ADK's: test_client
                rx = template_regex(template)
                self.assertTrue(any(m == method and rx.match(p) for m, p, _ in sent),
                                "%s (%s %s) was not called" % (op_id, method, template))
