#!/usr/bin/python3
"""What one 1 000-message append (messages_append, an OpenAI Agents SDK
turn of 1 000 items of ~200 B) costs Redis, measured two ways on private
redis-servers on free loopback ports, with the library as the sidecar loads
it (go run ./bench/libraries):

  - instructions inside FCALL under valgrind's callgrind
    (--toggle-collect=fcallCommand): independent of the machine's load, so
    two trees compare exactly;
  - the script's time in SLOWLOG (slowlog-log-slower-than 0), median of
    `calls` appends on a plain redis-server (swings with the load).

  /usr/bin/python3 bench/messages_append_cost.py [calls]   # default 20
  MESSAGES=100 /usr/bin/python3 bench/messages_append_cost.py   # another batch size
  TRANSACTION=1 /usr/bin/python3 bench/messages_append_cost.py  # a replace_suffix of 1 000 by 1 000

To compare two trees, run it from each (git archive <commit> | tar -x -C
/tmp/old; cd /tmp/old; /usr/bin/python3 bench/messages_append_cost.py).
Needs valgrind (callgrind_control too), redis-server, go and Debian's
python3-redis. Results: BENCHMARKS.md, "In-flight byte budget".
"""
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

import redis

from benchlib import free_port, wait_redis

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
N = int(os.environ.get("MESSAGES", "1000"))  # messages per append


def library():
    """The scripts library as the sidecar loads it, and messages_append's
    and messages_transaction's names in it."""
    d = tempfile.mkdtemp()
    name = subprocess.run(["go", "run", "./bench/libraries", d], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout.split()[0]
    src = open(os.path.join(d, name + ".lua")).read()
    suffix = "_" + name.rsplit("_", 1)[1]
    return src, "messages_append" + suffix, "messages_transaction" + suffix


# the core's settings (lib/session.lua): TTL, grain (µs), events maxlen, mode
SETTINGS = "86400 60000000 1000 w"


def keys(u, s):
    """The KEYS of a session script: the session's record (lib/session.lua)."""
    return [f"agent_session_record:{u}:{s}"]


def args(u, s):
    """messages_append's ARGV for N tool outputs of ~200 B, as the sidecar sends them (not indexed)."""
    out = [SETTINGS, "0", "", "latest", "", "10000", "", "0", "4194304"]
    text = " ".join("w%d" % (i % 50) for i in range(50))[:200]
    for j in range(N):
        mid = "%s-m%04d" % (s, j)
        item = json.dumps({"type": "function_call_result", "callId": "c%d" % j, "output": text}, separators=(",", ":"))
        body = '{"id":"%s","role":"tool","item":%s,"format":"openai.responses","tokens":%d}' % (mid, item, 60)
        out += [mid, "fp%08d" % j, "60", body, "", "0"]
    return out


def replace_args(u, s):
    """messages_transaction's ARGV replacing the N messages args(u, s) stored
    by N new ones (a replace_suffix of N by N)."""
    out = [SETTINGS, "op-" + s, "digest", "suffix", "0", "10000", "0", "4194304", str(N)]
    for j in range(N):
        out += ["%s-m%04d" % (s, j), "fp%08d" % j]
    new = args(u, s + "-new")[9:]
    for j in range(N):
        out += ["new"] + new[6 * j:6 * j + 6]
    return out


def start(port, valgrind=None):
    cmd = ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no", "--busy-reply-threshold", "600000"]
    if valgrind:
        cmd = ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=fcallCommand",
               "--callgrind-out-file=" + valgrind] + cmd
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r = redis.Redis(port=port, socket_timeout=600)
    if wait_redis(r, 200, 0.2):
        return p, r
    raise SystemExit("redis-server on %d did not start" % port)


def main():
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    src, fn, txfn = library()
    tx = os.environ.get("TRANSACTION")  # set: measure a replace_suffix of N by N instead

    # instructions: one warm-up append (the library's first call), then 3 counted
    out = tempfile.mktemp(prefix="callgrind.")
    p, r = start(free_port(), out)
    try:
        r.function_load(src)
        r.fcall(fn, 1, *keys("cg", "warm"), *args("cg", "warm"))
        if tx:
            for i in range(3):
                r.fcall(fn, 1, *keys("cg", "s%d" % i), *args("cg", "s%d" % i))
        subprocess.run(["callgrind_control", "-z", str(p.pid)], capture_output=True)
        subprocess.run(["callgrind_control", "-i", "on", str(p.pid)], capture_output=True)
        for i in range(3):
            if tx:
                r.fcall(txfn, 1, *keys("cg", "s%d" % i), *replace_args("cg", "s%d" % i))
            else:
                r.fcall(fn, 1, *keys("cg", "s%d" % i), *args("cg", "s%d" % i))
        subprocess.run(["callgrind_control", "-d", str(p.pid)], capture_output=True)
    finally:
        r.shutdown(nosave=True)
        p.wait()
    total = 0
    for f in glob.glob(out + "*"):
        for line in open(f):
            if line.startswith("summary:") or line.startswith("totals:"):
                total = max(total, int(line.split()[1]))
                break
    what = "replace_suffix of %d by %d" % (N, N) if tx else "%d-message append" % N
    print("instructions per %s: %.1f M" % (what, total / 3 / 1e6))
    if os.environ.get("ANNOTATE"):
        for f in glob.glob(out + "*"):
            print(subprocess.run(["callgrind_annotate", "--inclusive=no", f], capture_output=True, text=True).stdout[:int(os.environ["ANNOTATE"])])

    # time: SLOWLOG of each append on a plain redis-server
    p, r = start(free_port())
    try:
        r.function_load(src)
        r.config_set("slowlog-log-slower-than", 0)
        r.fcall(fn, 1, *keys("t", "warm"), *args("t", "warm"))
        took = []
        for i in range(calls):
            a = args("t", "s%d" % i)
            if tx:
                r.fcall(fn, 1, *keys("t", "s%d" % i), *a)
                a = replace_args("t", "s%d" % i)
            r.slowlog_reset()
            r.fcall(txfn if tx else fn, 1, *keys("t", "s%d" % i), *a)
            took.extend(e["duration"] for e in r.slowlog_get(10) if e["command"].split()[0].upper() == b"FCALL" or str(e["command"]).upper().startswith("FCALL"))
        print("Redis time per %s: median %.1f ms, min %.1f ms (%d calls)" % (
            what, statistics.median(took) / 1000, min(took) / 1000, len(took)))
    finally:
        r.shutdown(nosave=True)
        p.wait()


if __name__ == "__main__":
    main()
