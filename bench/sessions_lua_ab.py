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
the libraries of issue 28 held one session_lib.lua instead.)

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
from sessions_lua_cost import append_entries, eval_sources, library, private_redis, update_feedback  # noqa: E402



def fcall_ab(r, rounds, n):
    """EVALSHA vs FCALL of this tree's append and feedback, alternating."""
    ev = eval_sources()
    src, fapp, fupd = library()
    r.function_load(src, replace=True)
    sha_app, sha_upd = r.script_load(ev["session_append"]), r.script_load(ev["session_entry_update"])
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
            append_entries(p, append, n)
            ev = r.info("commandstats")[stat]
            got[f"append {w}"].append(ev["usec_per_call"])
            r.flushall()
            append_entries(p, append, 500, "fb")
            r.config_resetstat()
            update_feedback(p, update, n)
            fb = r.info("commandstats")[stat]
            if ev.get("failed_calls") or fb.get("failed_calls"):
                sys.exit(f"{w}: calls failed")
            got[f"feedback {w}"].append(fb["usec_per_call"])
            print(f"{w:8s} append {ev['usec_per_call']:7.2f} us   feedback {fb['usec_per_call']:7.2f} us", flush=True)
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
                append = r.script_load(src["session_append"])
                sha = r.script_load(src["session_entry_update"])
                r.flushall()
                r.config_resetstat()
                p = r.pipeline(transaction=False)
                append_entries(p, lambda p, *a: p.evalsha(append, *a), n)
                ap = r.info("commandstats")["cmdstat_evalsha"]
                r.flushall()
                append_entries(p, lambda p, *a: p.evalsha(append, *a), 500, "fb")
                r.config_resetstat()
                update_feedback(p, lambda p, *a: p.evalsha(sha, *a), n)
                ev = r.info("commandstats")["cmdstat_evalsha"]
                if ev.get("failed_calls") or ap.get("failed_calls"):
                    sys.exit(f"{name}: calls failed")
                got[f"append {name}"].append(ap["usec_per_call"])
                got[f"feedback {name}"].append(ev["usec_per_call"])
                print(f"{name:30s} append {ap['usec_per_call']:7.2f} us   feedback {ev['usec_per_call']:7.2f} us", flush=True)
        for name, v in got.items():
            print(f"median {name:32s} {statistics.median(v):7.2f} us (min {min(v):.2f}, max {max(v):.2f})")


if __name__ == "__main__":
    main()
