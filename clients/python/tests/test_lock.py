"""The lock helper: held, refreshed in the background, released; lost and
reported; two processes contending never overlap, fences increase."""

import os
import subprocess
import sys
import tempfile
import time
import unittest

from agentsidecar import LockHeld, LockLost, Sidecar

from .support import URL, unique


class LockHelper(unittest.TestCase):
    def setUp(self):
        self.sc = Sidecar(URL)
        self.addCleanup(self.sc.close)

    def test_held_refreshed_released(self):
        name = unique("py-lock")
        with self.sc.lock(name, ttl=1, wait=0) as lk:
            first = self.sc.inspect_lock(name)
            self.assertEqual((first["held"], first["fencing_token"]), (True, lk.fencing_token))
            # Outlive three TTLs: only the background refresh keeps it.
            for _ in range(12):
                time.sleep(0.25)
                self.assertTrue(self.sc.inspect_lock(name)["held"])
            lk.check()
        self.assertEqual(self.sc.inspect_lock(name), {"held": False})

    def test_held_elsewhere(self):
        name = unique("py-lock-held")
        g = self.sc.acquire_lock(name, ttl_ms=10000)
        with self.assertRaises(LockHeld) as cm:
            with self.sc.lock(name, ttl=5, wait=0.05):
                self.fail("entered a held lock")
        self.assertEqual((cm.exception.status, cm.exception.code), (409, "lock_held"))
        self.sc.release_lock(name, g["token"])

    def test_lost_raises_on_exit(self):
        name = unique("py-lock-lost")
        with self.assertRaises(LockLost):
            with self.sc.lock(name, ttl=0.3, wait=0) as lk:
                # Someone frees it behind our back (an operator, a TTL
                # that ran out): the refresh finds it gone.
                self.sc.release_lock(name, lk.token)
                self.assertTrue(lk.lost.wait(5), "the refresh did not notice the loss")
                with self.assertRaises(LockLost):
                    lk.check()

    def test_body_exception_wins(self):
        name = unique("py-lock-exc")
        with self.assertRaises(KeyError):
            with self.sc.lock(name, ttl=5, wait=0):
                raise KeyError("x")
        self.assertEqual(self.sc.inspect_lock(name), {"held": False})

    def test_two_processes(self):
        """Two OS processes take one lock 10 times each: the log's critical
        sections never interleave and fencing tokens strictly increase."""
        name = unique("py-lock-procs")
        worker = os.path.join(os.path.dirname(__file__), "lock_worker.py")
        with tempfile.TemporaryDirectory() as d:
            log = os.path.join(d, "log")
            procs = [subprocess.Popen([sys.executable, worker, URL, name, log, "10", w]) for w in ("a", "b")]
            for p in procs:
                self.assertEqual(p.wait(120), 0)
            with open(log) as f:
                lines = [ln.split() for ln in f.read().splitlines()]
        self.assertEqual(len(lines), 40)
        fences = []
        for i in range(0, 40, 2):
            enter, exit_ = lines[i], lines[i + 1]
            self.assertEqual((enter[0], exit_[0]), ("enter", "exit"), "overlap at line %d: %s" % (i, lines[i : i + 2]))
            self.assertEqual(enter[1:], exit_[1:], "overlap at line %d: %s" % (i, lines[i : i + 2]))
            fences.append(int(enter[1]))
        self.assertEqual(fences, sorted(set(fences)), "fencing tokens not strictly increasing: %s" % fences)
        self.assertEqual({ln[2] for ln in lines}, {"a", "b"})
