#!/usr/bin/python3
"""Marginal Redis memory per session: the sidecar against Cognee's plain
list, with the same entries, in one run.

  go build -o bin/sidecar ./cmd/sidecar
  /usr/bin/python3 bench/memory_per_session.py [sessions users entries]   # default 600 50 10

Each case gets a private redis-server (no persistence) and, but for Cognee,
bin/sidecar on it; the sessions' entries (about 830 bytes of JSON each, as
big_session.py writes them) are appended through the API
(POST .../entries, one per call). The marginal memory is INFO's
used_memory after the writes minus before, per session; "by family" sums
MEMORY USAGE of each key family's keys per session. Cases:

  cognee             RPUSH + EXPIRE of the very entries the first sidecar
                     case stored (LRANGE'd), as Cognee writes them
  unwatched          SESSION_EVENTS=watched, nobody watching
  watched            the same with every session's stream watched (its
                     marker set as a reader sets it, for the whole run)
  always             SESSION_EVENTS=always (every event recorded)
  each of the three with SEARCH_INDEX=off, on-demand (the default: these
                     users never search, so nothing is indexed) and eager.

Last, the watched case's event streams are copied with every event's data
replaced by {id, kind, preview}: the first 200 characters of the object's
JSON, to weigh id+preview events against whole ones (MEMORY USAGE).
Results: BENCHMARKS.md, "Memory per session".
"""
import hashlib
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
T0 = datetime(2026, 11, 24, 10, 0, 0)
FAMILIES = ["agent_sessions:", "agent_session_qa_index:", "agent_session_record:", "agent_session_events:",
            "agent_user_marker:", "agent_search", "agent_sessions_by_user", "agent_sessions_global",
            "agent_user_", "agent_usage"]


def body(u, s, i):
    return json.dumps({"qa_id": f"{u}-{s}-{i}", "question": f"what about item {i} of {s}?",
                       "answer": "lorem ipsum " * 58, "context": ""})


def http(port, method, path, data=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 data=data.encode() if data else None, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return resp.status


def redis_server():
    tmp = tempfile.mkdtemp()
    port = free_port()
    p = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                          "--dir", tmp], stdout=subprocess.DEVNULL)
    r = redis.Redis(port=port, decode_responses=True)
    if wait_redis(r, 200, 0.05):
        return p, port, r
    raise RuntimeError("redis-server did not start")


def used(r):
    r.execute_command("MEMORY", "PURGE")
    return r.info("memory")["used_memory"]


def families(r, n):
    out = {}
    for k in r.scan_iter(count=1000):
        fam = next((f for f in FAMILIES if k.startswith(f)), "other")
        out[fam] = out.get(fam, 0) + (r.memory_usage(k, samples=0) or 0)
    return {f: v / n for f, v in out.items()}


def sessions(nsess, nusers):
    return [(f"user{i % nusers}", f"sess{i}") for i in range(nsess)]


def sidecar_case(binary, env_extra, nsess, nusers, nent, watched):
    p, port, r = redis_server()
    aport, oport = free_port(), free_port()
    env = dict(os.environ, REDIS_URL=f"redis://127.0.0.1:{port}", SIDECAR_LISTEN_ADDR=f"127.0.0.1:{aport}",
               SIDECAR_OPS_ADDR=f"127.0.0.1:{oport}", LOG_LEVEL="warn", **env_extra)
    sc = subprocess.Popen([binary], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(oport, 400)
        # one session written first, so the scripts, the connection and
        # Redis's own structures are in place before the baseline
        http(aport, "POST", "/v1/users/warm/sessions/warm/entries", body("warm", "warm", 0))
        r.delete(*list(r.scan_iter("*warm*")))
        ss = sessions(nsess, nusers)
        if watched:
            # as a reader does (events/events_watch.lua): "<until ms>:<since
            # ms>" in the field w:<s> of the user's marker (named by the
            # user id's SHA1)
            now = int(time.time() * 1000)
            for u, s in ss:
                marker = "agent_user_marker:" + hashlib.sha1(u.encode()).hexdigest()
                r.hset(marker, f"w:{s}", f"{now + 3600000}:{now}")
                r.pexpire(marker, 3600000)
        before = used(r)
        for i in range(nent):
            for u, s in ss:
                http(aport, "POST", f"/v1/users/{u}/sessions/{s}/entries", body(u, s, i))
        after = used(r)
        entries = {f"{u}:{s}": r.lrange(f"agent_sessions:{u}:{s}", 0, -1) for u, s in ss}
        fam = families(r, nsess)
        streams = [f"agent_session_events:{u}:{s}" for u, s in ss] if watched else []
        preview = None
        if streams:
            full = sum(r.memory_usage(k, samples=0) or 0 for k in streams)
            small = 0
            for k in streams:
                copy = k + ":preview"
                for eid, f in r.xrange(k):
                    d = f["d"]
                    try:
                        obj = json.loads(d)
                        oid = obj.get("qa_id") if isinstance(obj, dict) else None
                    except ValueError:
                        oid = None
                    r.xadd(copy, {"t": f["t"], "d": json.dumps({"id": oid, "kind": "entry", "preview": d[:200]})}, id=eid)
                small += r.memory_usage(copy, samples=0) or 0
                r.delete(copy)
            preview = (full / nsess, small / nsess)
        return (after - before) / nsess, fam, entries, preview
    finally:
        sc.terminate()
        sc.wait()
        p.terminate()
        p.wait()


def cognee_case(entries, nsess):
    p, port, r = redis_server()
    try:
        r.set("warm", "x")
        r.delete("warm")
        before = used(r)
        for gid, vals in entries.items():
            u, s = gid.split(":", 1)
            for v in vals:  # Cognee: one RPUSH and an EXPIRE per entry
                r.rpush(f"agent_sessions:{u}:{s}", v)
                r.expire(f"agent_sessions:{u}:{s}", 604800)
        after = used(r)
        return (after - before) / nsess, families(r, nsess)
    finally:
        p.terminate()
        p.wait()


def main():
    nsess, nusers, nent = (int(a) for a in (sys.argv[1:4] if len(sys.argv) >= 4 else (600, 50, 10)))
    binary = os.path.join(ROOT, "bin", "sidecar")
    rows, entries, previews = [], None, None
    for search in ("off", "on-demand", "eager"):
        for name, mode, watched in (("unwatched", "watched", False), ("watched", "watched", True),
                                    ("always", "always", False)):
            per, fam, ents, prev = sidecar_case(binary, {"SESSION_EVENTS": mode, "SEARCH_INDEX": search},
                                                nsess, nusers, nent, watched)
            entries = entries or ents
            previews = previews or prev
            rows.append((f"{name}, SEARCH_INDEX={search}", per, fam))
    cog, cfam = cognee_case(entries, nsess)
    print(f"{nsess} sessions, {nusers} users, {nent} entries each; marginal used_memory per session")
    print(f"{'case':34} {'bytes':>8} {'× Cognee':>9}")
    print(f"{'cognee (RPUSH + EXPIRE)':34} {cog:8.0f} {1.0:9.2f}")
    for name, per, _ in rows:
        print(f"{name:34} {per:8.0f} {per / cog:9.2f}")
    print("\nMEMORY USAGE by family, bytes per session")
    cols = [("cognee", cfam)] + [(n, f) for n, _, f in rows]
    fams = sorted({f for _, c in cols for f in c})
    for name, c in cols:
        print(name + ": " + ", ".join(f"{f.rstrip(':')}={c[f]:.0f}" for f in fams if c.get(f)))
    if previews:
        print(f"\nwatched session streams: whole events {previews[0]:.0f} B/session, id+preview {previews[1]:.0f} B/session")


if __name__ == "__main__":
    main()
