#!/usr/bin/python3
"""Instructions Redis executes per append and per feedback script: the
session library's functions (as the sidecar loads them) run under
valgrind's callgrind inside a private redis-server on a free loopback port,
counting only inside FCALL (--toggle-collect=fcallCommand). Instruction
counts do not depend on the machine's load, so two trees compare exactly
where the µs of sessions_lua_cost.py and sessions_load.sh swing by ±20 %.

  /usr/bin/python3 bench/sessions_lua_instructions.py [calls]   # default 1000
  CASES=common,due /usr/bin/python3 bench/sessions_lua_instructions.py 300
  LIBRARY=/tmp/lib.lua /usr/bin/python3 bench/sessions_lua_instructions.py 300

The calls are the sidecar's (sessionstore.Store.Exec): KEYS the session's
record and the user's marker, ARGV[1] the core's settings as the sidecar
sends them by default ("604800 60000000 1000 w": SESSION_TTL_SECONDS,
the 60 s grain, SESSION_EVENTS_MAXLEN, SESSION_EVENTS=watched with nobody
watching), then the script's own. It prints, per call, the instructions and
the commands the script ran (INFO commandstats: a check that the case is
the one named) of each case (CASES picks some, by name):

  common    an append to an existing session within the grain (the usual
            case): 1000 entries per session, unique qa_ids, entries as
            Cognee writes them, '?!' as the sidecar sends it by default
            (SEARCH_INDEX=on-demand, a user who never searched); each
            session's first append runs before the count
  off       the same with SEARCH_INDEX=off (no document, no '?!')
  due       the same with the grain due on every call (a grain of 0:
            the bookkeeping: status, expiry and activity scores, TTLs)
  new       a new session's first append (one session per call)
  searched  common for a user with an index (its marker's search field),
            the entry's document sent ('?' + 22 stems)
  eager     the entry's document sent (SEARCH_INDEX=eager)
  feedback  PUT .../feedback (session_entry_update) on a 500-entry session,
            random targets
  and for scale, functions of a library of their own called with the same
  KEYS and ARGV: one (`return 1`), rpush (Cognee's RPUSH + EXPIRE inside
  a function) and eight (the eight commands of the common append, bare:
  the record's and the marker's HMGETs, the index's HMGET, LINDEX, TIME,
  RPUSH, the index's and the record's HSETs; no checks, no Lua around).

CALLGRIND_OUT=<path>: keeps each case's callgrind output as <path>.<case>
(callgrind_annotate --inclusive=yes <path>.common: where the instructions
go). LIBRARY=<file>: the library from that file (as go run ./bench/libraries DIR
writes it) instead of this tree's, e.g. one edited by hand for an A/B. To
compare two trees, run it from each (git archive <commit> | tar -x -C
/tmp/old; cd /tmp/old; /usr/bin/python3 bench/sessions_lua_instructions.py);
a tree before the lean core takes another contract: run its own copy of
this tool there. Needs valgrind (callgrind_control too), redis-server
(Debian's exports fcallCommand), go, and Debian's python3-redis. Results:
BENCHMARKS.md, "Cost in proportion: the lean core".
"""
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sessions_cognee as sc  # noqa: E402
from sessions_lua_cost import SETTINGS, SETTINGS_DUE, append_call, feedback_call, library  # noqa: E402

FLOOR = """#!lua name=instructions_floor
local function one(keys, argv) return 1 end
local function rpush_expire(keys, argv)
  redis.call('RPUSH', keys[1], argv[4])
  redis.call('EXPIRE', keys[1], 604800)
  return 1
end
local function eight(keys, argv)
  local r = keys[1]
  redis.call('HMGET', keys[2], 'fence', 'keys', 'search', 'w:s')
  redis.call('HMGET', r, 'status', 'ttl_seconds', 'slid_at', 'fams', 'idx', 'abort_requested_at')
  redis.call('HMGET', r .. ':q', '#len', '#last', '#head', argv[3])
  redis.call('LINDEX', r .. ':l', -1)
  local t = redis.call('TIME')
  local n = redis.call('RPUSH', r .. ':l', argv[4])
  redis.call('HSET', r .. ':q', argv[3], n, '#len', n, '#last', argv[3])
  redis.call('HSET', r, 'last_activity_at', t[1], 'entry_count', n)
  return {'ok', 0, 0}
end
redis.register_function('instructions_one', one)
redis.register_function('instructions_rpush_expire', rpush_expire)
redis.register_function('instructions_eight', eight)
"""

# the search document the sidecar sends with the entry: the 22 stems of
# sessions_cognee.py's Q&A text, tf 1 each, and its length
SPEC = " ".join(f"{w} 1" for w in (
    "what say quarter report revenu growth emea region q3 section 4.2 grew 12 year driven dach "
    "market new enterpris contract nordic mostli").split())


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def fcall(p, fn, call):
    k, a = call
    p.fcall(fn, len(k), *k, *a)


def measure(src, fn, n, prepare=None, case="case"):
    """Instructions in FCALL and commands inside the scripts per call, over
    n calls of fn(pipeline, i, functions: append, feedback, floor's by
    name), on a fresh redis-server under callgrind; prepare(pipeline,
    functions) runs before the count starts."""
    port = free_port()
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "callgrind.out")
        vg = subprocess.Popen(
            ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=fcallCommand",
             f"--callgrind-out-file={out}", "redis-server", "--port", str(port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", d],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        r = redis.Redis(host="127.0.0.1", port=port)
        for _ in range(600):
            try:
                r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.1)
        lib, fapp, fupd = src
        r.function_load(lib, replace=True)
        r.function_load(FLOOR, replace=True)
        fns = {"append": fapp, "feedback": fupd, "one": "instructions_one",
               "rpush": "instructions_rpush_expire", "eight": "instructions_eight"}
        p = r.pipeline(transaction=False)
        if prepare:
            prepare(p, fns)
            p.execute()
        # count from here: the preparation's calls are not the ones measured
        subprocess.run(["callgrind_control", "-z", str(vg.pid)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        r.config_resetstat()
        for i in range(n):
            fn(p, i, fns)
            if i % 500 == 499:
                p.execute()
        p.execute()
        st = r.info("commandstats")
        if st.get("cmdstat_fcall", {}).get("failed_calls"):
            sys.exit(f"{st['cmdstat_fcall']['failed_calls']} calls failed")
        inner = {k[8:]: v["calls"] / n for k, v in st.items() if k not in ("cmdstat_fcall", "cmdstat_config|resetstat")}
        try:
            r.shutdown(nosave=True)
        except redis.ConnectionError:
            pass
        vg.wait()
        if os.environ.get("CALLGRIND_OUT"):
            # for callgrind_annotate: <CALLGRIND_OUT>.<case>
            shutil.copy(out, os.environ["CALLGRIND_OUT"] + "." + case)
        total = 0
        with open(out) as f:
            for line in f:
                if line.startswith("totals:") or line.startswith("summary:"):
                    total = int(line.split()[1])
        return total / n, inner


def cases(n):
    """name -> (label, fn, prepare) of every case (see the docstring)."""
    sessions = range(n // 1000 + 1)

    def first(u, spec, settings=SETTINGS):
        def prepare(p, f):
            for s in sessions:
                fcall(p, f["append"], append_call(True, u, f"s{s}", f"first{s}", *spec, settings=settings))
        return prepare

    def append(u, spec, settings=SETTINGS, name="append"):
        return lambda p, i, f: fcall(p, f[name], append_call(True, u, f"s{i // 1000}", f"q{i}", *spec,
                                                             settings=settings))

    def new(p, i, f):
        fcall(p, f["append"], append_call(True, "bench", f"n{i}", f"q{i}", "?!"))

    def searched(p, f):
        p.hset("agent_user_marker:" + __import__("hashlib").sha1(b"idx").hexdigest(), "search", "1")
        first("idx", ["?" + SPEC, "38"])(p, f)

    def preload(p, f):
        for i in range(500):
            fcall(p, f["append"], append_call(True, "bench", "fb", f"q{i}", "?!"))

    rng = random.Random(1)

    def feedback(p, i, f):
        fcall(p, f["feedback"], feedback_call(True, "bench", "fb", f"q{rng.randrange(500)}", 1 + i % 5))

    return {
        "common": ("append, existing session, within the grain", append("bench", ["?!"]), first("bench", ["?!"])),
        "off": ("the same, SEARCH_INDEX=off", append("bench", []), first("bench", [])),
        "due": ("the same, the grain due (bookkeeping)", append("bench", ["?!"], SETTINGS_DUE),
                first("bench", ["?!"], SETTINGS_DUE)),
        "new": ("a new session's first append", new, None),
        "searched": ("append, on-demand, user with an index", append("idx", ["?" + SPEC, "38"]), searched),
        "eager": ("append with its search document (eager)", append("bench", [SPEC, "38"]), first("bench", [SPEC, "38"])),
        "feedback": ("feedback, 500 entries (session_entry_update)", feedback, preload),
        "one": ("return 1", append("bench", ["?!"], name="one"), None),
        "rpush": ("RPUSH + EXPIRE in a function", append("bench", ["?!"], name="rpush"), None),
        "eight": ("the common append's 8 commands, bare", append("bench", ["?!"], name="eight"), None),
    }


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    src = library()
    want = os.environ.get("CASES", "").split(",") if os.environ.get("CASES") else None
    print(f"instructions per FCALL, {n} calls each (callgrind, inside fcallCommand); commands per call")
    for name, (label, fn, prepare) in cases(n).items():
        if want and name not in want:
            continue
        per, inner = measure(src, fn, n, prepare, name)
        cmds = " ".join(f"{k} {v:g}" for k, v in sorted(inner.items()))
        print(f"  {name:9s} {label:46s} {per:9.0f}   {sum(inner.values()):4.1f}: {cmds}", flush=True)


if __name__ == "__main__":
    main()
