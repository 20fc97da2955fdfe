#!/usr/bin/python3
"""Instructions Redis executes per append and per feedback script: the
session library's functions (as the sidecar loads them) run under
valgrind's callgrind inside a private redis-server on a free loopback port,
counting only inside FCALL (--toggle-collect=fcallCommand). Instruction
counts do not depend on the machine's load, so two trees compare exactly
where the µs of sessions_lua_cost.py and sessions_load.sh swing by ±20 %.

  /usr/bin/python3 bench/sessions_lua_instructions.py [calls]   # default 2000

It prints instructions per call of: the append (1000 entries per session,
unique qa_ids, entries as Cognee writes them), without and with the
entry's search document (SEARCH_INDEX=eager and on-demand), the feedback on a 500-entry
session (random targets), and for scale three functions of a library of its
own with the same 15 KEYS and 6 ARGV: `return 1`; RPUSH + EXPIRE (Cognee's
two commands, inside a function); and the writes an append cannot do
without and nothing else (TIME, RPUSH, the qa_id index's HSET, the
record's HSET, the two activity scores, XADD, PUBLISH: no checks).

To compare two trees, run it from each (git archive <commit> | tar -x -C
/tmp/old; cd /tmp/old; /usr/bin/python3 bench/sessions_lua_instructions.py).
Needs valgrind (callgrind_control too), redis-server (Debian's exports fcallCommand), go, and
Debian's python3-redis. Results: BENCHMARKS.md, "Append and feedback".
"""
import os
import random
import subprocess
import sys
import tempfile

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sessions_cognee as sc  # noqa: E402
from benchlib import free_port, pipelined, wait_redis  # noqa: E402
from sessions_lua_cost import keys, library  # noqa: E402

FLOOR = """#!lua name=instructions_floor
local function one(keys, argv) return 1 end
local function rpush_expire(keys, argv)
  redis.call('RPUSH', keys[1], argv[6])
  redis.call('EXPIRE', keys[1], argv[1])
  return 1
end
local function essential(keys, argv)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local newlen = redis.call('RPUSH', keys[1], argv[6])
  redis.call('HSET', keys[5], argv[5], tostring(newlen - 1), '#len', tostring(newlen), '#last', argv[5])
  redis.call('HSET', keys[4], 'last_activity_at', string.format('%d', now), 'entry_count', newlen)
  redis.call('ZADD', keys[7], now, argv[4])
  redis.call('ZADD', keys[10], now, argv[3] .. ':' .. argv[4])
  local ek = 'agent_session_events:' .. argv[3] .. ':' .. argv[4]
  redis.call('XADD', ek, 'MAXLEN', '~', 1000, '*', 't', 'entry_appended', 'd', argv[6])
  redis.call('PUBLISH', 'sidecar:events:' .. ek, '')
  return {1, 0}
end
redis.register_function('instructions_one', one)
redis.register_function('instructions_rpush_expire', rpush_expire)
redis.register_function('instructions_essential', essential)
"""


def measure(fn, n, prepare=None):
    """Instructions in FCALL over n calls of fn(pipeline, i, append, feedback
    function names), on a fresh redis-server under callgrind;
    prepare(pipeline, append function) runs before the count starts."""
    port = free_port()
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "callgrind.out")
        vg = subprocess.Popen(
            ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=fcallCommand",
             f"--callgrind-out-file={out}", "redis-server", "--port", str(port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", d],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        r = redis.Redis(host="127.0.0.1", port=port)
        wait_redis(r, 300, 0.1)
        src, fapp, fupd = library()
        r.function_load(src, replace=True)
        r.function_load(FLOOR, replace=True)
        p = r.pipeline(transaction=False)
        if prepare:
            prepare(p, fapp)
            p.execute()
            # count from here: the preparation's calls are not the ones measured
            subprocess.run(["callgrind_control", "-z", str(vg.pid)], check=True, stdout=subprocess.DEVNULL)
        pipelined(p, n, lambda i: fn(p, i, fapp, fupd))
        st = r.info("commandstats").get("cmdstat_fcall", {})
        if st.get("failed_calls"):
            sys.exit(f"{st['failed_calls']} calls failed")
        try:
            r.shutdown(nosave=True)
        except redis.ConnectionError:
            pass
        vg.wait()
        total = 0
        with open(out) as f:
            for line in f:
                if line.startswith("totals:") or line.startswith("summary:"):
                    total = int(line.split()[1])
        return total


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000

    def append(p, i, fapp, fupd, name=None):
        k = keys("bench", f"s{i // 1000}")
        p.fcall(name or fapp, len(k), *k, 604800, 0, "bench", f"s{i // 1000}", f"q{i}", sc.entry(f"q{i}"))

    def preload(p, fapp):
        k = keys("bench", "fb")
        for i in range(500):
            p.fcall(fapp, len(k), *k, 604800, 0, "bench", "fb", f"q{i}", sc.entry(f"q{i}"))

    rng = random.Random(1)

    def feedback(p, i, fapp, fupd):
        k = keys("bench", "fb")
        p.fcall(fupd, len(k), *k, 604800, 0, "bench", "fb", f"q{rng.randrange(500)}", "",
                "feedback_text", '"fine"', "feedback_score", str(1 + i % 5))

    # the search document the sidecar sends with the entry (SEARCH_INDEX=true,
    # the default): the 22 stems of sessions_cognee.py's Q&A text, tf 1 each
    spec = " ".join(f"{w} 1" for w in (
        "what say quarter report revenu growth emea region q3 section 4.2 grew 12 year driven dach "
        "market new enterpris contract nordic mostli").split())

    def append_indexed(p, i, fapp, fupd):
        k = keys("bench", f"s{i // 1000}")
        p.fcall(fapp, len(k), *k, 604800, 0, "bench", f"s{i // 1000}", f"q{i}", sc.entry(f"q{i}"),
                spec, 38)

    # SEARCH_INDEX=on-demand: a user who never searched gets '?!' alone (no
    # document); one with an index (its statistics hash) '?' + the spec
    def append_probe(p, i, fapp, fupd):
        k = keys("bench", f"s{i // 1000}")
        p.fcall(fapp, len(k), *k, 604800, 0, "bench", f"s{i // 1000}", f"q{i}", sc.entry(f"q{i}"), "?!")

    def marked(p, fapp):
        p.hset("agent_search_stats:idx", "n", 0)

    def append_searched(p, i, fapp, fupd):
        k = keys("idx", f"s{i // 1000}")
        p.fcall(fapp, len(k), *k, 604800, 0, "idx", f"s{i // 1000}", f"q{i}", sc.entry(f"q{i}"),
                "?" + spec, 38)

    print(f"instructions per FCALL, {n} calls each (callgrind, inside fcallCommand)")
    total = measure(append, n)
    print(f"  {'append (session_append, SEARCH_INDEX=off)':44s} {total / n:9.0f}")
    total = measure(append_probe, n)
    print(f"  {'append, on-demand, user never searched':44s} {total / n:9.0f}")
    total = measure(append_searched, n, prepare=marked)
    print(f"  {'append, on-demand, user with an index':44s} {total / n:9.0f}")
    total = measure(append_indexed, n)
    print(f"  {'append with its search document (eager)':44s} {total / n:9.0f}")
    total = measure(feedback, n, prepare=preload)
    print(f"  {'feedback, 500 entries (session_entry_update)':44s} {total / n:9.0f}")
    for name, label in (("instructions_essential", "only an append's writes, no checks"),
                        ("instructions_rpush_expire", "RPUSH + EXPIRE in a function"),
                        ("instructions_one", "return 1")):
        total = measure(lambda p, i, fa, fu, nm=name: append(p, i, fa, fu, nm), n)
        print(f"  {label:44s} {total / n:9.0f}")


if __name__ == "__main__":
    main()
