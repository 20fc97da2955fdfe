"""Error answers as SidecarError; retries only where safe; the token."""

import http.server
import threading
import unittest

from agentsidecar import Conflict, NotFound, Sidecar, SidecarError, Unavailable

from .support import TOKEN, TOKEN_URL, URL, unique


class Errors(unittest.TestCase):
    def test_error_answers(self):
        sc = Sidecar(URL)
        self.addCleanup(sc.close)
        u, s = unique("py-errors"), "s1"
        sc.append_entry(u, s, "q", "a", qa_id="q1")
        cases = [
            ("unknown entry", lambda: sc.get_entry(u, s, "nope"), 404, "not_found", NotFound),
            ("unknown session", lambda: sc.get_session(u, "nope"), 404, "not_found", NotFound),
            ("ttl of unknown session", lambda: sc.get_session_ttl(u, "nope"), 404, "not_found", NotFound),
            ("release unheld lock", lambda: sc.release_lock(unique("free"), "tok"), 404, "not_held", NotFound),
            ("bad id", lambda: sc.get_entry("bad:id", s, "q1"), 400, "invalid_id", SidecarError),
            ("last_n out of range", lambda: sc.list_entries(u, s, last_n=5000), 400, "invalid_query", SidecarError),
            ("score out of range", lambda: sc.set_feedback(u, s, "q1", feedback_score=9), 400, "invalid_field", SidecarError),
            ("empty feedback", lambda: sc.set_feedback(u, s, "q1"), 400, "invalid_field", SidecarError),
            ("unknown field", lambda: sc.update_entry(u, s, "q1", prompt="x"), 400, "unknown_field", SidecarError),
            ("bad status filter", lambda: sc.list_sessions(status="bogus"), 400, "invalid_query", SidecarError),
            ("usage without model", lambda: sc.record_usage(u, s, ""), 400, "invalid_field", SidecarError),
            ("ttl out of range", lambda: sc.set_session_ttl(u, s, -5), 400, "invalid_field", SidecarError),
        ]
        for name, call, status, code, cls in cases:
            with self.subTest(name):
                with self.assertRaises(SidecarError) as cm:
                    call()
                e = cm.exception
                self.assertIsInstance(e, cls)
                self.assertEqual((e.status, e.code), (status, code))
                self.assertTrue(e.message)
                self.assertIn(code, str(e))
                self.assertEqual((e.not_found, e.conflict, e.unavailable), (status == 404, status == 409, False))
        sc.complete_session(u, s)
        with self.assertRaises(Conflict) as cm:
            sc.fail_session(u, s)
        self.assertEqual(cm.exception.code, "session_ended")

    def test_token(self):
        with self.assertRaises(SidecarError) as cm:
            Sidecar(TOKEN_URL).get_session_stats()
        self.assertEqual((cm.exception.status, cm.exception.code), (401, "unauthorized"))
        with self.assertRaises(SidecarError):
            Sidecar(TOKEN_URL, token="wrong").get_session_stats()
        sc = Sidecar(TOKEN_URL, token=TOKEN)
        self.addCleanup(sc.close)
        self.assertIn("sessions", sc.get_session_stats())


class _Flaky(http.server.BaseHTTPRequestHandler):
    """Answers 503 redis_unavailable (Retry-After: 0) to the first
    ``fail`` calls, then 201 with an entry."""

    protocol_version = "HTTP/1.1"
    fail = 0
    calls: list = []

    def _answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(n)
        type(self).calls.append((self.command, self.path))
        if len(type(self).calls) <= type(self).fail:
            body, status = b'{"error":{"code":"redis_unavailable","message":"Redis is unavailable"}}', 503
        else:
            body, status = b'{"qa_id":"q1","question":"q","answer":"a","context":"","time":"t"}', 201
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if status == 503:
            self.send_header("Retry-After", "0")
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET = do_DELETE = _answer

    def log_message(self, *args):
        pass


class Retries(unittest.TestCase):
    """A stand-in HTTP server that answers 503 first (the sidecar's answer
    while Redis is away): only calls safe to repeat are repeated."""

    def serve(self, fail):
        _Flaky.fail, _Flaky.calls = fail, []
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        sc = Sidecar("http://127.0.0.1:%d" % srv.server_address[1], retries=2)
        self.addCleanup(sc.close)
        return sc

    def test_safe_call_is_retried(self):
        sc = self.serve(fail=2)
        e = sc.append_entry("u", "s", "q", "a", qa_id="q1")
        self.assertTrue(e.created)
        self.assertEqual(len(_Flaky.calls), 3)

    def test_retries_run_out(self):
        sc = self.serve(fail=5)
        with self.assertRaises(Unavailable) as cm:
            sc.get_session("u", "s")
        self.assertEqual((cm.exception.code, cm.exception.retry_after), ("redis_unavailable", 0.0))
        self.assertEqual(len(_Flaky.calls), 3)

    def test_unsafe_call_is_not_retried(self):
        sc = self.serve(fail=1)
        with self.assertRaises(Unavailable):
            sc.acquire_lock("l")
        with self.assertRaises(Unavailable):
            _Flaky.calls = []
            _Flaky.fail = 1
            sc.delete_entry("u", "s", "q1")
        self.assertEqual(len(_Flaky.calls), 1)
