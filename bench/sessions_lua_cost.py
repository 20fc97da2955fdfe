#!/usr/bin/python3
"""Where Redis spends one append: runs session_append.lua and cut-down
variants of it (the same prelude) against a private redis-server on a free
loopback port, and prints Redis's own time per EVALSHA from INFO
commandstats, with the time of the redis.call()s inside it; then the
shipped append and feedback as FCALL of the library the sidecar loads
(go run ./bench/libraries), where the prelude's functions are defined once.

  /usr/bin/python3 bench/sessions_lua_cost.py [appends] [subscribers]
  # default 20000 appends; subscribers: Pub/Sub connections (one per
  # sidecar pod), 0 by default, each SUBSCRIBEd (not PSUBSCRIBE) to the
  # channels of every stream the run writes, sidecar:events:<stream key>
  # (pods watching those streams). SUBSCRIBE=other: each to the channel of
  # one stream the run does not write (idle pods: no message reaches
  # them); SUBSCRIBE=global: each to the single channel sidecar:events that
  # pods before per-stream channels listened on. LUA_DIR=<dir>: the
  # scripts of another tree's lua/ (the FCALL part is then skipped).
  # SHIPPED_ONLY=1: only the append as shipped (no variants, feedback or
  # FCALL), e.g. for Redis's cost per append with 0 and 8 pods:
  #   SHIPPED_ONLY=1 SUBSCRIBE=other /usr/bin/python3 bench/sessions_lua_cost.py 20000 8

Calls are pipelined from one connection so the client's speed does not
matter: only Redis-side time is reported, from INFO commandstats and, per
variant, redis-server's own CPU time (/proc, every thread) per call, which
also holds what commandstats leaves out (reading the pipelined commands,
writing the messages to subscribers). 1000 appends per session, unique
qa_ids, entries as Cognee writes them. Results: BENCHMARKS.md, "Sessions".
"""
import contextlib
import os
import random
import subprocess
import sys
import tempfile

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sessions_cognee as sc  # noqa: E402
from benchlib import free_port, pipelined, wait_redis  # noqa: E402

LUA = os.environ.get("LUA_DIR") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lua")


def cpu_us(pid):
    """redis-server's CPU time so far (µs), every thread (schedstat: ns)."""
    total = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{t}/schedstat") as f:
            total += int(f.read().split()[0])
    return total / 1000


def subscribe_all(port, subscribers, n):
    """The subscribers' connections (see the docstring's SUBSCRIBE)."""
    mode = os.environ.get("SUBSCRIBE", "streams")
    if mode == "global":
        chans = ["sidecar:events"]
    elif mode == "other":
        chans = None
    elif mode == "streams":
        chans = [f"sidecar:events:agent_session_events:bench:s{i}" for i in range((n + 999) // 1000)]
    else:
        sys.exit(f"SUBSCRIBE={mode}: want streams, other or global")
    subs = []
    for j in range(subscribers):
        ps = redis.Redis(host="127.0.0.1", port=port).pubsub()
        ps.subscribe(*(chans or [f"sidecar:events:agent_session_events:other:pod{j}"]))
        subs.append(ps)
    return subs


def keys(u, s):
    """The 15 KEYS of a session script (redisstore/keys.go, standalone)."""
    sid = f"{u}:{s}"
    return ([f"agent_sessions:{sid}", f"agent_traces:{sid}", f"session_context:{sid}",
             f"agent_session_record:{sid}", f"agent_session_qa_index:{sid}", f"agent_session_usage_ids:{sid}"]
            + [f"agent_sessions_by_user:{u}:{x}" for x in ("running", "completed", "failed")]
            + [f"agent_sessions_global:{x}" for x in ("running", "completed", "failed")]
            + ["agent_sessions_global:expiry", "agent_usage_totals", "agent_usage_by_model"])


def append_entries(p, call, n, session=None):
    """Queues the appends of entries q0 .. q<n-1> on pipeline p through
    call(p, numkeys, *keys_and_args) (an EVALSHA or FCALL of
    session_append): to session bench/<session>, or without one 1000 a
    session (s0, s1, ...); executed every 500 calls and at the end."""
    def send(i):
        s = session or f"s{i // 1000}"
        k = keys("bench", s)
        call(p, len(k), *k, 604800, 0, "bench", s, f"q{i}", sc.entry(f"q{i}"))
    pipelined(p, n, send)


def update_feedback(p, call, n):
    """Queues n feedback updates of random entries among bench/fb's q0 ..
    q499 through call (session_entry_update), as append_entries."""
    rng = random.Random(1)
    k = keys("bench", "fb")

    def send(i):
        call(p, len(k), *k, 604800, 0, "bench", "fb", f"q{rng.randrange(500)}", "",
             "feedback_text", '"fine"', "feedback_score", str(1 + i % 5))
    pipelined(p, n, send)


def library():
    """The session library as the sidecar loads it, and its function names."""
    with tempfile.TemporaryDirectory() as d:
        names = subprocess.run(["go", "run", "./bench/libraries", d], cwd=os.path.join(LUA, ".."),
                               check=True, capture_output=True, text=True).stdout.split()
        for name in names:
            src = open(os.path.join(d, name + ".lua")).read()
            if "function_name = 'session_append_" in src:
                break
    suffix = "_" + name.rsplit("_", 1)[1]
    return src, "session_append" + suffix, "session_entry_update" + suffix


def eval_sources(tree=None):
    """Each stock script's text as EVAL runs it (its libraries, then its
    body), of this tree or of another tree's checkout: script name -> text."""
    root = tree or os.path.join(LUA, "..")
    with tempfile.TemporaryDirectory() as d:
        subprocess.run(["go", "run", "./bench/libraries", d], cwd=root, check=True, capture_output=True)
        ev = os.path.join(d, "eval")
        return {f[:-4]: open(os.path.join(ev, f)).read() for f in os.listdir(ev)}


def variants():
    """The shipped append, and "return 1" for scale. (The cut-down variants
    of the single prelude no longer apply since the scripts include small
    libraries; bench/sessions_lua_instructions.py and BENCHMARKS.md break
    the append down by instructions instead.)"""
    return {"session_append.lua as shipped": eval_sources()["session_append"], "return 1 (no prelude)": "return 1"}


def feedback(r, n):
    """Redis's time per feedback (session_entry_update.lua) on a 500-entry
    session, random targets, pipelined: the script without the wake-ups a
    one-client load adds."""
    src = eval_sources()
    app, upd = r.script_load(src["session_append"]), r.script_load(src["session_entry_update"])
    r.flushall()
    p = r.pipeline(transaction=False)
    append_entries(p, lambda p, *a: p.evalsha(app, *a), 500, "fb")
    r.config_resetstat()
    update_feedback(p, lambda p, *a: p.evalsha(upd, *a), n)
    st = r.info("commandstats")
    ev = st["cmdstat_evalsha"]
    skip = {"cmdstat_evalsha", "cmdstat_config|resetstat"}
    inner = [v for kk, v in st.items() if kk not in skip]
    print(f"{'feedback, 500 entries, random':34s} EVALSHA {ev['usec_per_call']:6.2f} us/call, of which "
          f"{sum(v['calls'] for v in inner) / n:4.1f} redis.call()s {sum(v['usec'] for v in inner) / n:5.2f} us"
          f"{'  FAILED ' + str(ev.get('failed_calls')) if ev.get('failed_calls') else ''}")
    if os.environ.get("BREAKDOWN"):
        print("    " + ", ".join(f"{kk[8:]} {v['calls'] / n:.1f}x {v['usec_per_call']:.2f}us"
                                 for kk, v in sorted(st.items()) if kk not in skip))


def fcall(r, n):
    """The shipped append and feedback through FCALL of the session library,
    and what is left of the libraries' per-call cost: the call's context
    (session.open) before a bare return, against a bare return."""
    src, fapp, fupd = library()
    r.function_load(src, replace=True)
    suffix = fapp[len("session_append"):]
    libname = src.split("\n", 1)[0][len("#!lua name="):]
    bench = (src.replace("#!lua name=" + libname, "#!lua name=bench_" + libname, 1).replace(suffix + "'", suffix + "b'")
             + "redis.register_function{function_name='bench_begin', callback=function(KEYS, ARGV) session.open(KEYS, ARGV) return 1 end}\n"
             + "redis.register_function{function_name='bench_return', callback=function(KEYS, ARGV) return 1 end}\n")
    r.function_load(bench, replace=True)
    for name, fn in (("FCALL session.open + return 1", "bench_begin"), ("FCALL return 1 (the same library)", "bench_return")):
        r.config_resetstat()
        append_entries(r.pipeline(transaction=False), lambda p, *a: p.fcall(fn, *a), n, "fixed")
        print(f"{name:34s} FCALL   {r.info('commandstats')['cmdstat_fcall']['usec_per_call']:6.2f} us/call")
    r.function_delete("bench_" + libname)
    skip = {"cmdstat_fcall", "cmdstat_config|resetstat", "cmdstat_flushall"}
    for name in ("append, FCALL", "feedback, 500 entries, FCALL"):
        r.flushall()
        p = r.pipeline(transaction=False)
        if name.startswith("feedback"):
            append_entries(p, lambda p, *a: p.fcall(fapp, *a), 500, "fb")
            r.config_resetstat()
            update_feedback(p, lambda p, *a: p.fcall(fupd, *a), n)
        else:
            r.config_resetstat()
            append_entries(p, lambda p, *a: p.fcall(fapp, *a), n)
        st = r.info("commandstats")
        ev = st["cmdstat_fcall"]
        inner = [v for kk, v in st.items() if kk not in skip]
        print(f"{name:34s} FCALL   {ev['usec_per_call']:6.2f} us/call, of which "
              f"{sum(v['calls'] for v in inner) / n:4.1f} redis.call()s {sum(v['usec'] for v in inner) / n:5.2f} us"
              f"{'  FAILED ' + str(ev.get('failed_calls')) if ev.get('failed_calls') else ''}")


@contextlib.contextmanager
def private_redis():
    """A redis-server on a free loopback port, without persistence, ready
    (it answers PING): yields its port and its pid."""
    port = free_port()
    with tempfile.TemporaryDirectory() as d:
        srv = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                "--appendonly", "no", "--dir", d, "--logfile", ""],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_redis(redis.Redis(host="127.0.0.1", port=port), 100, 0.05)
            yield port, srv.pid
        finally:
            srv.terminate()
            srv.wait(timeout=10)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    subscribers = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    with private_redis() as (port, pid):
        r = redis.Redis(host="127.0.0.1", port=port)
        subs = subscribe_all(port, subscribers, n)
        skip = {"cmdstat_evalsha", "cmdstat_config|resetstat", "cmdstat_script|load", "cmdstat_flushall"}
        vs = list(variants().items())
        if os.environ.get("SHIPPED_ONLY"):
            vs = vs[:1]
        for name, src in [("(warm-up, not shown)", vs[0][1])] + vs:
            r.flushall()
            sha = r.script_load(src)
            r.config_resetstat()
            cpu = cpu_us(pid)
            append_entries(r.pipeline(transaction=False), lambda p, *a: p.evalsha(sha, *a), n)
            cpu = (cpu_us(pid) - cpu) / n
            st = r.info("commandstats")
            ev = st["cmdstat_evalsha"]
            if name.startswith("(warm-up"):
                continue
            inner = [v for k, v in st.items() if k not in skip]
            print(f"{name:34s} EVALSHA {ev['usec_per_call']:6.2f} us/call, of which "
                  f"{sum(v['calls'] for v in inner) / n:4.1f} redis.call()s {sum(v['usec'] for v in inner) / n:5.2f} us;"
                  f" redis-server CPU {cpu:6.2f} us/call"
                  f"{'  FAILED ' + str(ev.get('failed_calls')) if ev.get('failed_calls') else ''}")
            if os.environ.get("BREAKDOWN") and inner:
                print("    " + ", ".join(f"{k[8:]} {v['calls'] / n:.1f}x {v['usec_per_call']:.2f}us"
                                         for k, v in sorted(st.items()) if k not in skip))
        if not os.environ.get("SHIPPED_ONLY"):
            feedback(r, n)
            if os.environ.get("LUA_DIR"):
                print("(FCALL part skipped: LUA_DIR)")
            else:
                fcall(r, n)
        for ps in subs:
            ps.close()


if __name__ == "__main__":
    main()
