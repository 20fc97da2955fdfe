#!/usr/bin/python3
"""Cognee's own session paths, for bench/sessions_load.sh (run it with
/usr/bin/python3 and Debian's python3-redis).

Cognee's Redis adapter appends a Q&A entry with RPUSH then EXPIRE, and sets
feedback client-side: LRANGE the whole list, json.loads every entry, change
the one with the qa_id, json.dumps it, LSET it back. This script does exactly
that with redis-py, plus two helpers that talk to the sidecar over HTTP.

Every mode prints one line: "<requests/s> <p50 ms> <p99 ms>" (or the entry).
"""
import argparse
import datetime
import http.client
import json
import random
import sys
import threading
import time
import uuid

import redis

# The Q&A text of sessions/bench_test.go and bench/sessions_append.lua.
QUESTION = "What did the quarterly report say about revenue growth in the EMEA region?"
CONTEXT = ("Q3 report, section 4.2: EMEA revenue grew 12% year over year, driven by the "
           "DACH markets and new enterprise contracts in the Nordics.")
ANSWER = "EMEA revenue grew 12% year over year in Q3, mostly from DACH and new Nordic enterprise contracts."


def entry(qa_id):
    """One entry as Cognee's create_qa_entry stores it (model_dump order, json.dumps)."""
    return json.dumps({
        "time": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "question": QUESTION, "context": CONTEXT, "answer": ANSWER, "qa_id": qa_id,
        "feedback_text": None, "feedback_score": None, "used_graph_element_ids": None,
        "memify_metadata": None, "used_session_context_ids": None,
    })


def summary(count, elapsed, lat):
    lat.sort()
    q = lambda p: lat[int(p * (len(lat) - 1))] * 1000 if lat else 0.0
    return f"{count / elapsed:.0f} {q(0.50):.3f} {q(0.99):.3f}"


def cognee_append(a):
    """16 threads, each RPUSH then EXPIRE of the same JSON to its own session."""
    r = redis.Redis(host="127.0.0.1", port=a.port, max_connections=a.threads + 4)
    value = entry(str(uuid.uuid4()))
    deadline = time.perf_counter() + a.seconds
    counts, lats = [0] * a.threads, [[] for _ in range(a.threads)]

    def work(i):
        key = f"agent_sessions:bench:cognee-{i}"
        lat, n = lats[i], 0
        while True:
            t0 = time.perf_counter()
            if t0 >= deadline:
                break
            r.rpush(key, value)
            r.expire(key, a.ttl)
            lat.append(time.perf_counter() - t0)
            n += 1
        counts[i] = n

    threads = [threading.Thread(target=work, args=(i,)) for i in range(a.threads)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(summary(sum(counts), time.perf_counter() - start, [x for l in lats for x in l]))


def cognee_feedback(a):
    """One client: Cognee's client-side feedback on a session of --entries."""
    r = redis.Redis(host="127.0.0.1", port=a.port)
    key = "agent_sessions:bench:cognee-fb"
    r.delete(key)
    r.rpush(key, *[entry(f"q-{i}") for i in range(a.entries)])
    rng = random.Random(1)

    def one():
        target = f"q-{rng.randrange(a.entries)}"
        entries = [json.loads(x) for x in r.lrange(key, 0, -1)]
        for i, e in enumerate(entries):
            if e.get("qa_id") == target:
                e["feedback_text"] = "useful, thanks"
                e["feedback_score"] = rng.randint(1, 5)
                r.lset(key, i, json.dumps(e))
                break
        else:
            sys.exit(f"no entry {target}")
    timed(a.seconds, one)


def timed(seconds, op):
    """Calls op() again and again for seconds, one at a time, and prints the
    summary of its latencies."""
    lat = []
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        t0 = time.perf_counter()
        op()
        lat.append(time.perf_counter() - t0)
    print(summary(len(lat), time.perf_counter() - start, lat))


def body(d):
    return json.dumps(d), {"Content-Type": "application/json"}


def preload_sidecar(a):
    """POST --entries entries q-0 .. q-(n-1) to session bench/fb of the sidecar."""
    c = http.client.HTTPConnection("127.0.0.1", a.api_port)
    for i in range(a.entries):
        b, h = body({"qa_id": f"q-{i}", "question": QUESTION, "context": CONTEXT, "answer": ANSWER})
        c.request("POST", "/v1/users/bench/sessions/fb/entries", b, h)
        resp = c.getresponse()
        resp.read()
        if resp.status != 201:
            sys.exit(f"preload: POST q-{i}: {resp.status}")
    print(f"{a.entries} 0 0")


def sidecar_feedback(a):
    """One Python client: PUT .../feedback on random entries of bench/fb."""
    c = http.client.HTTPConnection("127.0.0.1", a.api_port)
    rng = random.Random(1)

    def one():
        b, h = body({"feedback_text": "useful, thanks", "feedback_score": rng.randint(1, 5)})
        c.request("PUT", f"/v1/users/bench/sessions/fb/entries/q-{rng.randrange(a.entries)}/feedback", b, h)
        resp = c.getresponse()
        resp.read()
        if resp.status != 200:
            sys.exit(f"feedback: {resp.status}")
    timed(a.seconds, one)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["entry", "append", "feedback", "preload-sidecar", "sidecar-feedback"])
    p.add_argument("--port", type=int, help="Redis port")
    p.add_argument("--api-port", type=int, help="sidecar API port")
    p.add_argument("--threads", type=int, default=16)
    p.add_argument("--seconds", type=float, default=5)
    p.add_argument("--entries", type=int, default=500)
    p.add_argument("--ttl", type=int, default=604800)
    a = p.parse_args()
    if a.mode == "entry":
        print(entry(str(uuid.uuid4())))
        return
    {"append": cognee_append, "feedback": cognee_feedback,
     "preload-sidecar": preload_sidecar, "sidecar-feedback": sidecar_feedback}[a.mode](a)


if __name__ == "__main__":
    main()
