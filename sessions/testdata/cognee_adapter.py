#!/usr/bin/python3
"""A stand-in for Cognee's Redis session adapter, written from its documented
behaviour (not its code), for the interop test in cognee_interop_test.go:
entries are json.dumps of the ten SessionQAEntry fields, RPUSHed then
EXPIREd; updates read the whole list, change one entry and LSET it; deletes
rewrite the list (DEL + RPUSH of the survivors). Reads validate every entry
as Cognee's pydantic model does.

  cognee_adapter.py REDIS_URL COMMAND USER SESSION [JSON-ARGS]

Prints one JSON value on stdout; exits 1 with the reason on a model error.
"""
import json
import sys
import uuid
from datetime import datetime

import redis

FIELDS = ["time", "question", "context", "answer", "qa_id", "feedback_text",
          "feedback_score", "used_graph_element_ids", "memify_metadata",
          "used_session_context_ids"]
TTL = 604800


def validate(e):
    """SessionQAEntry's rules; returns model_dump() order and values."""
    for k in ("time", "question", "context", "answer"):
        if not isinstance(e.get(k), str):
            raise ValueError(f"{k} must be a string: {e.get(k)!r}")
    datetime.fromisoformat(e["time"])
    if e.get("qa_id") is not None and not isinstance(e["qa_id"], str):
        raise ValueError("qa_id")
    if e.get("feedback_text") is not None and not isinstance(e["feedback_text"], str):
        raise ValueError("feedback_text")
    s = e.get("feedback_score")
    if s is not None and (type(s) is not int or not 1 <= s <= 5):
        raise ValueError(f"feedback_score {s!r}")
    g = e.get("used_graph_element_ids")
    if g is not None:
        if not isinstance(g, dict) or set(g) - {"node_ids", "edge_ids"}:
            raise ValueError(f"used_graph_element_ids {g!r}")
        for v in g.values():
            if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                raise ValueError("used_graph_element_ids lists")
    m = e.get("memify_metadata")
    if m is not None and (not isinstance(m, dict) or not all(isinstance(v, bool) for v in m.values())):
        raise ValueError(f"memify_metadata {m!r}")
    c = e.get("used_session_context_ids")
    if c is not None and (not isinstance(c, list) or not all(isinstance(x, str) for x in c)):
        raise ValueError("used_session_context_ids")
    return {k: e.get(k) for k in FIELDS}


def main():
    url, cmd, user, session = sys.argv[1:5]
    args = json.loads(sys.argv[5]) if len(sys.argv) > 5 else {}
    r = redis.Redis.from_url(url, decode_responses=True)
    key = f"agent_sessions:{user}:{session}"
    if cmd == "create":
        entry = {"time": datetime.utcnow().isoformat(), "question": args["question"],
                 "context": args.get("context", ""), "answer": args["answer"],
                 "qa_id": args.get("qa_id") or str(uuid.uuid4()), "feedback_text": None,
                 "feedback_score": None, "used_graph_element_ids": None,
                 "memify_metadata": None, "used_session_context_ids": None}
        r.rpush(key, json.dumps(validate(entry)))
        r.expire(key, TTL)
        print(json.dumps(entry))
    elif cmd == "all":
        print(json.dumps([validate(json.loads(x)) for x in r.lrange(key, 0, -1)]))
    elif cmd == "feedback":
        entries = [json.loads(x) for x in r.lrange(key, 0, -1)]
        for i, e in enumerate(entries):
            if e.get("qa_id") == args["qa_id"]:
                e["feedback_score"] = args["score"]
                r.lset(key, i, json.dumps(validate(e)))
                r.expire(key, TTL)
                print("true")
                return
        print("false")
    elif cmd == "delete":
        entries = [json.loads(x) for x in r.lrange(key, 0, -1)]
        kept = [e for e in entries if e.get("qa_id") != args["qa_id"]]
        r.delete(key)
        for e in kept:
            r.rpush(key, json.dumps(e))
        if kept:
            r.expire(key, TTL)
        print(json.dumps(len(kept) != len(entries)))
    else:
        raise SystemExit(f"unknown command {cmd}")


if __name__ == "__main__":
    try:
        main()
    except ValueError as err:
        print(f"model error: {err}", file=sys.stderr)
        sys.exit(1)
