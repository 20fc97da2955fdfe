#!/usr/bin/python3
"""Redis's time per append (session_append, FCALL, 1000 per session, unique
qa_ids, no search document) with this tree's libraries and with another
tree's, alternating on one private redis-server: the cost of the erasure
fence as it was then (lib/erasure.lua: one EXISTS of the user's progress
key in every write's guard; the fence is now a field of the user's marker,
which session.begin reads with the record at no cost of its own). Prints
each run and the medians.

  git archive <commit> | tar -x -C /tmp/before
  /usr/bin/python3 bench/erase_fence_ab.py /tmp/before [rounds] [calls]

Results: BENCHMARKS.md, "Erasure".
"""
import os
import statistics
import subprocess
import sys
import tempfile

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sessions_lua_cost import append_entries, private_redis  # noqa: E402

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def library(tree):
    """tree's library holding session_append, and that function's name."""
    with tempfile.TemporaryDirectory() as d:
        names = subprocess.run(["go", "run", "./bench/libraries", d], cwd=tree,
                               check=True, capture_output=True, text=True).stdout.split()
        for name in names:
            src = open(os.path.join(d, name + ".lua")).read()
            if "function_name = 'session_append_" in src:
                return src, "session_append_" + name.rsplit("_", 1)[1]
    raise SystemExit(f"{tree}: no library with session_append")


def run(r, src, fn, n):
    r.flushall()
    r.function_flush()
    r.function_load(src)
    r.config_resetstat()
    append_entries(r.pipeline(transaction=False), lambda p, *a: p.fcall(fn, *a), n)
    return float(r.info("commandstats")["cmdstat_fcall"]["usec_per_call"])


def main():
    other = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
    libs = {"this tree": library(HERE), "other tree": library(other)}
    got = {k: [] for k in libs}
    with private_redis() as (port, _):
        r = redis.Redis(port=port)
        for i in range(rounds):
            for name, (src, fn) in libs.items():
                got[name].append(run(r, src, fn, n))
            print(f"round {i + 1}: " + ", ".join(f"{k} {v[-1]:.2f} µs" for k, v in got.items()), flush=True)
    for k, v in got.items():
        print(f"median {k}: {statistics.median(v):.2f} µs per append")
    a, b = statistics.median(got["this tree"]), statistics.median(got["other tree"])
    print(f"this / other: {a / b:.3f}")


if __name__ == "__main__":
    main()
