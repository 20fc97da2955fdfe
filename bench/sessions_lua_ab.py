#!/usr/bin/python3
"""Redis's time per append (session_append.lua, 1000 per session, unique
qa_ids) and per feedback (session_entry_update.lua) on a 500-entry session,
random targets, with this tree's session_lib.lua and with another one,
alternating on one private redis-server so the machine's load hits both
alike; prints each run and the medians.

  git show <commit>:lua/session_lib.lua > /tmp/before_lib.lua
  /usr/bin/python3 bench/sessions_lua_ab.py /tmp/before_lib.lua [rounds] [calls]

With "fcall" instead of a file it times this tree's append (1000 per
session, unique qa_ids) and feedback both ways, alternating: EVALSHA of the
script with its prelude, and FCALL of its function in the library the
sidecar loads (go run ./bench/libraries):

  /usr/bin/python3 bench/sessions_lua_ab.py fcall [rounds] [calls]

Results: BENCHMARKS.md, "Append and feedback: the five targets".
"""
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sessions_cognee as sc  # noqa: E402
from sessions_lua_cost import keys, library  # noqa: E402

LUA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lua")


def fcall_ab(r, rounds, n):
    """EVALSHA vs FCALL of this tree's append and feedback, alternating."""
    lib = open(os.path.join(LUA, "session_lib.lua")).read()
    upd = open(os.path.join(LUA, "session_entry_update.lua")).read()
    app = open(os.path.join(LUA, "session_append.lua")).read()
    src, fapp, fupd = library()
    r.function_load(src, replace=True)
    sha_app, sha_upd = r.script_load(lib + "\n" + app), r.script_load(lib + "\n" + upd)
    ways = {
        "EVALSHA": (lambda p, *a: p.evalsha(sha_app, *a), lambda p, *a: p.evalsha(sha_upd, *a), "cmdstat_evalsha"),
        "FCALL": (lambda p, *a: p.fcall(fapp, *a), lambda p, *a: p.fcall(fupd, *a), "cmdstat_fcall"),
    }
    got = {f"{op} {w}": [] for op in ("append", "feedback") for w in ways}
    for _ in range(rounds):
        for w, (append, update, stat) in ways.items():
            r.flushall()
            r.config_resetstat()
            p = r.pipeline(transaction=False)
            for i in range(n):
                k = keys("bench", f"s{i // 1000}")
                append(p, len(k), *k, 604800, 0, "bench", f"s{i // 1000}", f"q{i}", sc.entry(f"q{i}"))
                if i % 500 == 499:
                    p.execute()
            p.execute()
            ev = r.info("commandstats")[stat]
            got[f"append {w}"].append(ev["usec_per_call"])
            r.flushall()
            k = keys("bench", "fb")
            for i in range(500):
                append(p, len(k), *k, 604800, 0, "bench", "fb", f"q{i}", sc.entry(f"q{i}"))
            p.execute()
            r.config_resetstat()
            rng = random.Random(1)
            for i in range(n):
                update(p, len(k), *k, 604800, 0, "bench", "fb", f"q{rng.randrange(500)}", "",
                       "feedback_text", '"fine"', "feedback_score", str(1 + i % 5))
                if i % 500 == 499:
                    p.execute()
            p.execute()
            fb = r.info("commandstats")[stat]
            if ev.get("failed_calls") or fb.get("failed_calls"):
                sys.exit(f"{w}: calls failed")
            got[f"feedback {w}"].append(fb["usec_per_call"])
            print(f"{w:8s} append {ev['usec_per_call']:7.2f} us   feedback {fb['usec_per_call']:7.2f} us", flush=True)
    for name, v in got.items():
        print(f"median {name:23s} {statistics.median(v):7.2f} us (min {min(v):.2f}, max {max(v):.2f})")


def main():
    if sys.argv[1] == "fcall":
        other = None
    else:
        other = open(sys.argv[1]).read()
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    lib = open(os.path.join(LUA, "session_lib.lua")).read()
    upd = open(os.path.join(LUA, "session_entry_update.lua")).read()
    app = open(os.path.join(LUA, "session_append.lua")).read()
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with tempfile.TemporaryDirectory() as d:
        srv = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                "--appendonly", "no", "--dir", d, "--logfile", ""],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            r = redis.Redis(host="127.0.0.1", port=port)
            for _ in range(100):
                try:
                    r.ping()
                    break
                except redis.ConnectionError:
                    time.sleep(0.05)
            if other is None:
                fcall_ab(r, rounds, n)
                return
            k = keys("bench", "fb")
            got = {f"{op} {name}": [] for op in ("append", "feedback") for name in ("this tree", sys.argv[1])}
            for _ in range(rounds):
                for name, src in (("this tree", lib), (sys.argv[1], other)):
                    append = r.script_load(src + "\n" + app)
                    sha = r.script_load(src + "\n" + upd)
                    r.flushall()
                    r.config_resetstat()
                    p = r.pipeline(transaction=False)
                    for i in range(n):
                        ka = keys("bench", f"s{i // 1000}")
                        p.evalsha(append, len(ka), *ka, 604800, 0, "bench", f"s{i // 1000}", f"q{i}", sc.entry(f"q{i}"))
                        if i % 500 == 499:
                            p.execute()
                    p.execute()
                    ap = r.info("commandstats")["cmdstat_evalsha"]
                    r.flushall()
                    for i in range(500):
                        p.evalsha(append, len(k), *k, 604800, 0, "bench", "fb", f"q{i}", sc.entry(f"q{i}"))
                    p.execute()
                    r.config_resetstat()
                    rng = random.Random(1)
                    for i in range(n):
                        p.evalsha(sha, len(k), *k, 604800, 0, "bench", "fb", f"q{rng.randrange(500)}", "",
                                  "feedback_text", '"fine"', "feedback_score", str(1 + i % 5))
                        if i % 500 == 499:
                            p.execute()
                    p.execute()
                    ev = r.info("commandstats")["cmdstat_evalsha"]
                    if ev.get("failed_calls") or ap.get("failed_calls"):
                        sys.exit(f"{name}: calls failed")
                    got[f"append {name}"].append(ap["usec_per_call"])
                    got[f"feedback {name}"].append(ev["usec_per_call"])
                    print(f"{name:30s} append {ap['usec_per_call']:7.2f} us   feedback {ev['usec_per_call']:7.2f} us", flush=True)
            for name, v in got.items():
                print(f"median {name:32s} {statistics.median(v):7.2f} us (min {min(v):.2f}, max {max(v):.2f})")
        finally:
            srv.terminate()
            srv.wait(timeout=10)


if __name__ == "__main__":
    main()
