#!/usr/bin/python3
"""Redis's time per append and per feedback: runs session_append.lua (as
EVAL runs it: its libraries, then its body) and, for scale, `return 1`
against a private redis-server on a free loopback port, and prints Redis's
own time per EVALSHA from INFO commandstats, with the time of the
redis.call()s inside it; then the shipped append and feedback as FCALL of
the library the sidecar loads (go run ./bench/libraries), with the cost of
session.open alone.

  /usr/bin/python3 bench/sessions_lua_cost.py [appends] [subscribers]
  # default 20000 appends; subscribers: Pub/Sub connections (one per
  # sidecar pod), 0 by default, each SUBSCRIBEd (not PSUBSCRIBE) to the
  # channels of every stream the run writes, sidecar:events:<stream key>
  # (pods watching those streams). SUBSCRIBE=other: each to the channel of
  # one stream the run does not write (idle pods: no message reaches
  # them); SUBSCRIBE=global: each to the single channel sidecar:events that
  # pods before per-stream channels listened on. The scripts run with the
  # core's settings the sidecar sends by default (SETTINGS below:
  # SESSION_EVENTS=watched, and nobody watches, so no event is recorded);
  # SESSION_EVENTS=always records every event (what subscribers need to
  # receive anything). LUA_DIR=<dir>: the scripts of another tree's lua/,
  # of the lean core's contract or the one before it (the FCALL part is
  # then skipped). LIBRARY=<file>: the FCALL part's library from that file
  # (as go run ./bench/libraries DIR writes it) instead of this tree's.
  # SHIPPED_ONLY=1: only the append as shipped (no feedback or FCALL),
  # e.g. for Redis's cost per append with 0 and 8 pods:
  #   SESSION_EVENTS=always SHIPPED_ONLY=1 SUBSCRIBE=other /usr/bin/python3 bench/sessions_lua_cost.py 20000 8
  # BREAKDOWN=1: each command's calls and µs per script call.

The calls are those of the sidecar (sessionstore.Store.Exec): KEYS the
session's record and the user's marker, ARGV[1] the core's settings, then
the script's own (SESSION_MAX_ENTRIES 0, the qa_id, the entry as Cognee
writes it, and '?!': SEARCH_INDEX=on-demand for a user who never
searched). Calls are pipelined from one connection so the client's speed
does not matter: only Redis-side time is reported, from INFO commandstats
and, per variant, redis-server's own CPU time (/proc, every thread) per
call, which also holds what commandstats leaves out (reading the pipelined
commands, writing the messages to subscribers). 1000 appends per session,
unique qa_ids. The µs swing with the machine's load: for two trees or two
versions of a library, compare instructions (sessions_lua_instructions.py).
Results: BENCHMARKS.md, "Sessions" (and "Cost in proportion: the lean
core").
"""
import contextlib
import hashlib
import os
import random
import socket
import subprocess
import sys
import tempfile
import time

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sessions_cognee as sc  # noqa: E402

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


# The core's settings the sidecar sends by default (ARGV[1] of every session
# script; sessionstore.New, lib/session.lua): "<ttl> <grain µs> <maxlen>
# <mode>" with SESSION_TTL_SECONDS 604800, the grain min(60 s,
# SESSION_ABANDON_AFTER_SECONDS 1800 / 30), SESSION_EVENTS_MAXLEN 1000 and
# SESSION_EVENTS=watched ('w'; SESSION_EVENTS=always in this tool's
# environment: 'a', every event recorded).
MODE = "a" if os.environ.get("SESSION_EVENTS") == "always" else "w"
SETTINGS = f"604800 60000000 1000 {MODE}"
# the same with a grain of 0: every write's bookkeeping is due
SETTINGS_DUE = f"604800 0 1000 {MODE}"


def keys(u, s):
    """The KEYS of a session script as sessionstore.Store.Exec sends them
    (standalone Redis): the session's record and the user's marker."""
    return [f"agent_session_record:{u}:{s}", "agent_user_marker:" + hashlib.sha1(u.encode()).hexdigest()]


def old_keys(u, s):
    """The 15 KEYS of a session script before the lean core (a tree whose
    lib/session.lua still takes them: lean() is false)."""
    sid = f"{u}:{s}"
    return ([f"agent_sessions:{sid}", f"agent_traces:{sid}", f"session_context:{sid}",
             f"agent_session_record:{sid}", f"agent_session_qa_index:{sid}", f"agent_session_usage_ids:{sid}"]
            + [f"agent_sessions_by_user:{u}:{x}" for x in ("running", "completed", "failed")]
            + [f"agent_sessions_global:{x}" for x in ("running", "completed", "failed")]
            + ["agent_sessions_global:expiry", "agent_usage_totals", "agent_usage_by_model"])


def lean(src):
    """Whether script text src (a script as EVAL runs it, or a library) is
    of the lean core's contract; a tree before it took 15 KEYS and ARGV
    TTL, max entries, user_id, session_id."""
    return "KEYS[1..15]" not in src


def call(is_lean, u, s, *args, settings=SETTINGS):
    """KEYS and ARGV of a call of session_append or session_entry_update
    (their own arguments args: SESSION_MAX_ENTRIES first) to session s of
    user u, in the lean contract, or the old one when not is_lean."""
    if is_lean:
        return keys(u, s), [settings, *args]
    return old_keys(u, s), [604800, args[0], u, s, *args[1:]]


def append_call(is_lean, u, s, qa, *extra, settings=SETTINGS):
    """session_append's KEYS and ARGV: SESSION_MAX_ENTRIES 0, qa_id qa, the
    entry as Cognee writes it, then extra (the search document's spec and
    length, or '?!')."""
    return call(is_lean, u, s, "0", qa, sc.entry(qa), *extra, settings=settings)


def feedback_call(is_lean, u, s, qa, score, settings=SETTINGS):
    """session_entry_update's KEYS and ARGV setting entry qa's feedback, as
    PUT .../feedback does."""
    return call(is_lean, u, s, "0", qa, "", "feedback_text", '"fine"', "feedback_score", str(score),
                settings=settings)


def library(tree=None):
    """The scripts library as the sidecar loads it (go run ./bench/libraries
    in this tree, or in tree; LIBRARY=<file>: that library file as it is,
    e.g. one edited by hand for an A/B), and its session_append and
    session_entry_update function names."""
    if os.environ.get("LIBRARY") and not tree:
        src = open(os.environ["LIBRARY"]).read()
    else:
        with tempfile.TemporaryDirectory() as d:
            names = subprocess.run(["go", "run", "./bench/libraries", d], cwd=tree or os.path.join(LUA, ".."),
                                   check=True, capture_output=True, text=True).stdout.split()
            for name in names:
                src = open(os.path.join(d, name + ".lua")).read()
                if "function_name = 'session_append_" in src:
                    break
    suffix = "_" + src.split("\n", 1)[0].rsplit("_", 1)[1]
    return src, "session_append" + suffix, "session_entry_update" + suffix


def eval_sources(tree=None):
    """Each stock script's text as EVAL runs it (its libraries, then its
    body), of this tree or of another tree's checkout: script name -> text."""
    root = tree or os.path.join(LUA, "..")
    with tempfile.TemporaryDirectory() as d:
        subprocess.run(["go", "run", "./bench/libraries", d], cwd=root, check=True, capture_output=True)
        ev = os.path.join(d, "eval")
        return {f[:-4]: open(os.path.join(ev, f)).read() for f in os.listdir(ev)}


def pipelined(r, n, one):
    """Runs one(pipeline, i) for i < n, pipelined 500 at a time."""
    p = r.pipeline(transaction=False)
    for i in range(n):
        one(p, i)
        if i % 500 == 499:
            p.execute()
    p.execute()


def appends(run, is_lean):
    """one(pipeline, i) of the appends every part times: 1000 per session
    (unique qa_ids), '?!' as the sidecar sends it by default
    (SEARCH_INDEX=on-demand, a user who never searched); run(pipeline,
    keys, argv) sends one."""
    def one(p, i):
        k, a = append_call(is_lean, "bench", f"s{i // 1000}", f"q{i}", "?!")
        run(p, k, a)
    return one


def feedbacks(r, append, update, is_lean):
    """Writes the 500-entry session bench/fb (append(pipeline, keys, argv)
    sends an append) and returns one(pipeline, i) of the feedbacks on it,
    random targets (update sends one)."""
    pipelined(r, 500, lambda p, i: append(p, *append_call(is_lean, "bench", "fb", f"q{i}", "?!")))
    rng = random.Random(1)

    def one(p, i):
        update(p, *feedback_call(is_lean, "bench", "fb", f"q{rng.randrange(500)}", 1 + i % 5))
    return one


def inner_line(st, n, stat):
    """what INFO commandstats st says of n calls of stat (cmdstat_fcall or
    cmdstat_evalsha): its µs per call, and the redis.call()s inside it."""
    ev = st[stat]
    inner = [v for kk, v in st.items() if kk not in SKIP and kk != stat]
    return (f"{ev['usec_per_call']:6.2f} us/call, of which "
            f"{sum(v['calls'] for v in inner) / n:4.1f} redis.call()s {sum(v['usec'] for v in inner) / n:5.2f} us"
            f"{'  FAILED ' + str(ev.get('failed_calls')) if ev.get('failed_calls') else ''}")


SKIP = {"cmdstat_config|resetstat", "cmdstat_script|load", "cmdstat_flushall", "cmdstat_function|load",
        "cmdstat_function|delete"}


def breakdown(st, n):
    if os.environ.get("BREAKDOWN"):
        print("    " + ", ".join(f"{k[8:]} {v['calls'] / n:.1f}x {v['usec_per_call']:.2f}us"
                                 for k, v in sorted(st.items()) if k not in SKIP
                                 and k not in ("cmdstat_evalsha", "cmdstat_fcall")))


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
    one = feedbacks(r, lambda p, k, a: p.evalsha(app, len(k), *k, *a),
                    lambda p, k, a: p.evalsha(upd, len(k), *k, *a), lean(src["session_append"]))
    r.config_resetstat()
    pipelined(r, n, one)
    st = r.info("commandstats")
    print(f"{'feedback, 500 entries, random':34s} EVALSHA {inner_line(st, n, 'cmdstat_evalsha')}")
    breakdown(st, n)


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
        pipelined(r, n, lambda p, i: p.fcall(fn, 2, *append_call(True, "bench", "fixed", f"q{i}", "?!")[0],
                                             *append_call(True, "bench", "fixed", f"q{i}", "?!")[1]))
        print(f"{name:34s} FCALL   {r.info('commandstats')['cmdstat_fcall']['usec_per_call']:6.2f} us/call")
    r.function_delete("bench_" + libname)
    append = lambda p, k, a: p.fcall(fapp, len(k), *k, *a)  # noqa: E731
    for name in ("append, FCALL", "feedback, 500 entries, FCALL"):
        r.flushall()
        if name.startswith("feedback"):
            one = feedbacks(r, append, lambda p, k, a: p.fcall(fupd, len(k), *k, *a), True)
        else:
            one = appends(append, True)
        r.config_resetstat()
        pipelined(r, n, one)
        st = r.info("commandstats")
        print(f"{name:34s} FCALL   {inner_line(st, n, 'cmdstat_fcall')}")
        breakdown(st, n)


@contextlib.contextmanager
def private_redis():
    """A redis-server on a free loopback port, without persistence, ready
    (it answers PING): yields its port and its pid."""
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
        vs = list(variants().items())
        if os.environ.get("SHIPPED_ONLY"):
            vs = vs[:1]
        for name, src in [("(warm-up, not shown)", vs[0][1])] + vs:
            r.flushall()
            sha = r.script_load(src)
            r.config_resetstat()
            cpu = cpu_us(pid)
            pipelined(r, n, appends(lambda p, k, a: p.evalsha(sha, len(k), *k, *a), lean(src)))
            cpu = (cpu_us(pid) - cpu) / n
            st = r.info("commandstats")
            if name.startswith("(warm-up"):
                continue
            print(f"{name:34s} EVALSHA {inner_line(st, n, 'cmdstat_evalsha')}; redis-server CPU {cpu:6.2f} us/call")
            breakdown(st, n)
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
