"""redis-py's own Lock, driven by the locks interop test.

usage: pylock.py REDIS_URL NAME acquire TTL_MS BLOCKING_TIMEOUT_S  -> prints the token, or "-" if not acquired
       pylock.py REDIS_URL NAME release TOKEN                      -> prints "released" or "error: ..."
       pylock.py REDIS_URL NAME owned TOKEN                        -> prints "True"/"False"
The lock is left held when this process exits (a holder that is gone).
"""
import sys

import redis

url, name, op = sys.argv[1], sys.argv[2], sys.argv[3]
r = redis.Redis.from_url(url)
if op == "acquire":
    lock = r.lock(name, timeout=int(sys.argv[4]) / 1000.0, sleep=0.1,
                  blocking_timeout=float(sys.argv[5]), thread_local=False)
    ok = lock.acquire(blocking=float(sys.argv[5]) > 0)
    print(lock.local.token.decode() if ok else "-", flush=True)
elif op in ("release", "owned"):
    lock = r.lock(name, thread_local=False)
    lock.local.token = sys.argv[4].encode()
    if op == "owned":
        print(lock.owned(), flush=True)
    else:
        try:
            lock.release()
            print("released", flush=True)
        except redis.exceptions.LockError as e:
            print("error:", e, flush=True)
else:
    sys.exit("unknown op " + op)
