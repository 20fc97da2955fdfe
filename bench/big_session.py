#!/usr/bin/python3
"""Big Cognee-written sessions against the real sidecar binary: the largest
SLOWLOG entry any API call makes Redis log, and the sidecar's peak RSS.

  go build -o bin/sidecar ./cmd/sidecar
  /usr/bin/python3 bench/big_session.py [entries ...]   # default 20000 100000

For each size: a private redis-server on a free loopback port
(slowlog-log-slower-than 0, so every command is logged with Redis's own
duration), a session of that many Q&A entries (about 800 bytes each) and
as many context entries written as Cognee writes them (redis-py: RPUSH then
EXPIRE; a delete reads all, DEL, RPUSH the rest), and bin/sidecar on it.
Then rounds of Cognee writes (an RPUSH, a rewrite that deletes one entry,
a delete-then-recreate of the last entry, a context rewrite) between the
sidecar's calls: appends, retried appends, GET, feedback, PATCH, DELETE,
last_n, search, context append, update and delete. The SLOWLOG is reset
before each API call and read after it (Cognee's own commands are not
counted); the sidecar's VmHWM (peak RSS) is read from /proc at the end.
Last, with the sidecar stopped, the entries index is made again by
session_index_build alone, to show one step's cost without the noise of
other processes (SLOWLOG durations are wall-clock: on a loaded machine
they include time Redis was not scheduled).
Results: BENCHMARKS.md, "Big Cognee sessions".
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime, timedelta

import redis

from benchlib import free_port, wait_ready, wait_redis

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
U, S = "u1", "s1"
ENTRIES, CONTEXT = f"agent_sessions:{U}:{S}", f"session_context:{U}:{S}"
BASE = f"/v1/users/{U}/sessions/{S}"
T0 = datetime(2026, 11, 24, 10, 0, 0)


def entry(qa, i, word="plain"):
    return json.dumps({"time": (T0 + timedelta(microseconds=i)).isoformat(), "question": f"what about {qa} {word}?",
                       "context": "", "answer": "lorem ipsum " * 58, "qa_id": qa, "feedback_text": None,
                       "feedback_score": None, "used_graph_element_ids": None, "memify_metadata": None,
                       "used_session_context_ids": None})


def push(r, key, vals):
    for i in range(0, len(vals), 1000):
        r.rpush(key, *vals[i:i + 1000])
    r.expire(key, 604800)


def rewrite(r, key, drop):
    """Cognee's delete: read all, DEL, RPUSH the rest."""
    keep = [v for v in r.lrange(key, 0, -1) if not drop(json.loads(v))]
    r.delete(key)
    push(r, key, keep)


def http(port, method, path, body=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{BASE}{path}", method=method,
                                 data=body.encode() if body else None,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def vmhwm_mb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def index_steps(r):
    """Makes the entries index again with session_index_build alone (the
    shipped script as EVAL runs it, EVALSHA from one client, nothing else
    running): every step's SLOWLOG duration, in µs."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from sessions_lua_cost import SETTINGS, eval_sources, keys
    sha = r.script_load(eval_sources(ROOT)["session_index_build"])
    # KEYS the record and the user's marker, ARGV[1] the core's settings,
    # then SESSION_MAX_ENTRIES and the index (sessionstore.Store.Exec)
    ks, argv = keys(U, S), [SETTINGS, 0, "qa"]
    r.rpush(ENTRIES, r.lpop(ENTRIES))  # a rewrite: the index no longer describes the list
    r.slowlog_reset()
    # {'ok', 1} once the index covers the list, {'ok', 0} while steps are left
    while r.evalsha(sha, len(ks), *ks, *argv)[1] != 1:
        pass
    return [e["duration"] for e in r.slowlog_get(100000) if str(e["command"]).startswith(("EVALSHA", "b'EVALSHA"))]


def run(n, binary):
    tmp = tempfile.mkdtemp()
    rport, aport, oport = free_port(), free_port(), free_port()
    srv = subprocess.Popen(["redis-server", "--port", str(rport), "--bind", "127.0.0.1", "--save", "",
                            "--appendonly", "no", "--dir", tmp, "--slowlog-log-slower-than", "0",
                            "--slowlog-max-len", "100000"], stdout=subprocess.DEVNULL)
    sidecar = None
    try:
        r = redis.Redis(port=rport, decode_responses=True)
        wait_redis(r, 100, 0.05)
        clock = [n]

        def new(qa, word="plain"):
            clock[0] += 1
            return entry(qa, clock[0], word)

        push(r, ENTRIES, [entry(f"k{i}", i) for i in range(n)])
        push(r, CONTEXT, [json.dumps({"id": f"x{i}", "text": f"context {i}", "tags": []}) for i in range(n)])
        env = dict(os.environ, REDIS_URL=f"redis://127.0.0.1:{rport}", SIDECAR_LISTEN_ADDR=f"127.0.0.1:{aport}",
                   SIDECAR_OPS_ADDR=f"127.0.0.1:{oport}", LOG_LEVEL="warn")
        sidecar = subprocess.Popen([binary], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_ready(oport, 200)
        worst = {}  # call -> (µs, command, commands, wall ms)
        durations = []  # every command's µs

        def call(name, method, path, body=None, want=(200, 201, 204)):
            r.slowlog_reset()
            t = time.perf_counter()
            status, out = http(aport, method, path, body)
            wall = (time.perf_counter() - t) * 1000
            if status not in want:
                raise SystemExit(f"{name}: {method} {path} -> {status} {out[:200]!r}")
            logs = [e for e in r.slowlog_get(100000)
                    if not str(e["command"]).lower().startswith(("slowlog", "ping"))]
            durations.extend(e["duration"] for e in logs)
            top = max(logs, key=lambda e: e["duration"], default={"duration": 0, "command": ""})
            cmd = str(top["command"])[:40]
            if top["duration"] > worst.get(name, (0, ""))[0]:
                worst[name] = (top["duration"], cmd, len(logs), wall)

        mid = n // 2
        for rnd in range(3):
            call("first lookup / lookup", "GET", f"/entries/k{mid + rnd}")
            call("feedback", "PUT", f"/entries/k{5 + rnd}/feedback", '{"feedback_score":5}')
            call("append", "POST", "/entries", json.dumps({"qa_id": f"s{rnd}", "question": "q", "answer": "a"}))
            r.rpush(ENTRIES, new(f"c{rnd}", "needle"))
            r.expire(ENTRIES, 604800)
            call("append after a Cognee RPUSH", "POST", "/entries",
                 json.dumps({"qa_id": f"t{rnd}", "question": "q", "answer": "a"}))
            call("retried append", "POST", "/entries", json.dumps({"qa_id": f"c{rnd}", "question": "q", "answer": "a"}))
            rewrite(r, ENTRIES, lambda e: e["qa_id"] == f"k{rnd}")
            call("feedback after a Cognee rewrite", "PUT", f"/entries/k{10 + rnd}/feedback", '{"feedback_score":3}')
            call("GET of the deleted entry", "GET", f"/entries/k{rnd}", want=(404,))
            # delete-then-recreate: same length, same last qa_id
            last = json.loads(r.lindex(ENTRIES, -1))["qa_id"]
            rewrite(r, ENTRIES, lambda e: e["qa_id"] in (last, f"k{20 + rnd}"))
            r.rpush(ENTRIES, new(f"y{rnd}"), new(last))
            r.expire(ENTRIES, 604800)
            call("GET after delete-then-recreate", "GET", f"/entries/y{rnd}")
            call("retried append after delete-then-recreate", "POST", "/entries",
                 json.dumps({"qa_id": f"y{rnd}", "question": "q", "answer": "a"}))
            call("PATCH", "PATCH", f"/entries/k{30 + rnd}", '{"feedback_text":"ok"}')
            call("DELETE in the middle", "DELETE", f"/entries/k{mid + 10 + rnd}")
            call("DELETE of the newest", "DELETE", f"/entries/t{rnd}", want=(204, 404))
            call("last_n=1000", "GET", "/entries?last_n=1000")
            call("search", "GET", "/search?q=needle")
            call("context list", "GET", "/context")
            call("context append", "POST", "/context", json.dumps({"id": f"xn{rnd}", "text": "new"}))
            call("context update", "PATCH", f"/context/x{n - 1 - rnd}", '{"text":"changed"}')
            call("context delete", "DELETE", f"/context/x{n // 3 + rnd}")
            rewrite(r, CONTEXT, lambda e: e["id"] == f"x{rnd}")
            call("context append after a Cognee rewrite", "POST", "/context", json.dumps({"id": f"xm{rnd}", "text": "m"}))
        rss = vmhwm_mb(sidecar.pid)
        sidecar.terminate()
        sidecar.wait()
        sidecar = None
        steps = index_steps(r)
        mem = r.info("memory")["used_memory"] / 1e6
        print(f"\n{n} entries and {n} context entries ({mem:.0f} MB in Redis); sidecar peak RSS {rss:.1f} MB")
        print(f"{'call':45} {'largest SLOWLOG entry':>22} {'commands':>9} {'wall ms':>8}")
        for name, (us, cmd, count, wall) in worst.items():
            print(f"{name:45} {us / 1000:>17.2f} ms {count:>9} {wall:>8.1f}")
        top = max(worst.values())
        durations.sort()
        p = lambda q: durations[min(len(durations) - 1, int(q * len(durations)))] / 1000
        print(f"largest of all: {top[0] / 1000:.2f} ms ({top[1]}); of the {len(durations)} commands "
              f"p50 {p(0.5):.2f} ms, p99 {p(0.99):.2f} ms, p99.9 {p(0.999):.2f} ms")
        print(f"load average during the run: {os.getloadavg()[0]:.1f} (Redis's durations include time it was not scheduled)")
        steps.sort()
        print(f"session_index_build alone, the whole entries index made again ({len(steps)} steps, no other client): "
              f"median {steps[len(steps) // 2] / 1000:.2f} ms, p99 {steps[int(0.99 * len(steps))] / 1000:.2f} ms, "
              f"max {steps[-1] / 1000:.2f} ms")
    finally:
        if sidecar:
            sidecar.terminate()
            sidecar.wait()
        srv.terminate()
        srv.wait()


def main():
    binary = os.path.join(ROOT, "bin", "sidecar")
    if not os.access(binary, os.X_OK):
        raise SystemExit("build it first: go build -o bin/sidecar ./cmd/sidecar")
    for n in [int(a) for a in sys.argv[1:]] or [20000, 100000]:
        run(n, binary)


if __name__ == "__main__":
    main()
