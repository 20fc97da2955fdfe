#!/usr/bin/python3
"""Redis's time per append (session_append.lua, 1000 per session, unique
qa_ids) and per feedback (session_entry_update.lua) on a 500-entry session,
random targets, with this tree's scripts and with another tree's (each as
EVAL runs it: its libraries, then its body; go run ./bench/libraries in
each tree), alternating on one private redis-server so the machine's load
hits both alike; prints each run and the medians.

  git archive <commit> | tar -x -C /tmp/before
  /usr/bin/python3 bench/sessions_lua_ab.py /tmp/before [rounds] [calls]

(The other tree must have bench/libraries writing eval/: trees before
the libraries of issue 28 held one session_lib.lua instead. Each tree's
scripts get the calls of their contract: the lean core's, or the 15 KEYS
before it; the appends send '?!', SEARCH_INDEX=on-demand's default, which
trees before on-demand do not know.)

With "fcall" instead of a tree it times this tree's append (1000 per
session, unique qa_ids) and feedback both ways, alternating: EVALSHA of the
script with its libraries, and FCALL of its function in the library the
sidecar loads:

  /usr/bin/python3 bench/sessions_lua_ab.py fcall [rounds] [calls]

Results: BENCHMARKS.md, "Append and feedback: the five targets".
"""
import os
import statistics
import sys

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sessions_lua_cost import appends, eval_sources, feedbacks, lean, library, pipelined, private_redis  # noqa: E402


def one_run(r, n, append, update, stat, is_lean):
    """n appends (1000 per session, unique qa_ids) then n feedbacks on a
    500-entry session, random targets; append and update(pipeline, keys,
    argv) send one call (is_lean: the lean core's contract, else the 15
    KEYS before it); returns INFO commandstats' stat of each."""
    r.flushall()
    r.config_resetstat()
    pipelined(r, n, appends(append, is_lean))
    ap = r.info("commandstats")[stat]
    r.flushall()
    one = feedbacks(r, append, update, is_lean)
    r.config_resetstat()
    pipelined(r, n, one)
    fb = r.info("commandstats")[stat]
    if ap.get("failed_calls") or fb.get("failed_calls"):
        sys.exit("calls failed")
    return ap, fb


def fcall_ab(r, rounds, n):
    """EVALSHA vs FCALL of this tree's append and feedback, alternating."""
    ev = eval_sources()
    src, fapp, fupd = library()
    r.function_load(src, replace=True)
    sha_app, sha_upd = r.script_load(ev["session_append"]), r.script_load(ev["session_entry_update"])
    ways = {
        "EVALSHA": (lambda p, k, a: p.evalsha(sha_app, len(k), *k, *a),
                    lambda p, k, a: p.evalsha(sha_upd, len(k), *k, *a), "cmdstat_evalsha"),
        "FCALL": (lambda p, k, a: p.fcall(fapp, len(k), *k, *a),
                  lambda p, k, a: p.fcall(fupd, len(k), *k, *a), "cmdstat_fcall"),
    }
    got = {f"{op} {w}": [] for op in ("append", "feedback") for w in ways}
    for _ in range(rounds):
        for w, (append, update, stat) in ways.items():
            ap, fb = one_run(r, n, append, update, stat, lean(src))
            got[f"append {w}"].append(ap["usec_per_call"])
            got[f"feedback {w}"].append(fb["usec_per_call"])
            print(f"{w:8s} append {ap['usec_per_call']:7.2f} us   feedback {fb['usec_per_call']:7.2f} us", flush=True)
    for name, v in got.items():
        print(f"median {name:23s} {statistics.median(v):7.2f} us (min {min(v):.2f}, max {max(v):.2f})")


def main():
    other = None if sys.argv[1] == "fcall" else eval_sources(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    this = eval_sources()
    with private_redis() as (port, _):
        r = redis.Redis(host="127.0.0.1", port=port)
        if other is None:
            fcall_ab(r, rounds, n)
            return
        got = {f"{op} {name}": [] for op in ("append", "feedback") for name in ("this tree", sys.argv[1])}
        for _ in range(rounds):
            for name, src in (("this tree", this), (sys.argv[1], other)):
                app = r.script_load(src["session_append"])
                upd = r.script_load(src["session_entry_update"])
                # each tree's contract: the lean core's, or the 15 KEYS before it
                ap, fb = one_run(r, n, lambda p, k, a: p.evalsha(app, len(k), *k, *a),
                                 lambda p, k, a: p.evalsha(upd, len(k), *k, *a), "cmdstat_evalsha",
                                 lean(src["session_append"]))
                got[f"append {name}"].append(ap["usec_per_call"])
                got[f"feedback {name}"].append(fb["usec_per_call"])
                print(f"{name:30s} append {ap['usec_per_call']:7.2f} us   feedback {fb['usec_per_call']:7.2f} us", flush=True)
        for name, v in got.items():
            print(f"median {name:32s} {statistics.median(v):7.2f} us (min {min(v):.2f}, max {max(v):.2f})")


if __name__ == "__main__":
    main()
