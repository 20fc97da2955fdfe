"""Redis time of one message append script at the framework sizes
(BENCHMARKS.md, "In-flight byte budget"), from SLOWLOG with
slowlog-log-slower-than 0, against a running sidecar and its redis-server.

    python3 bench/append_cost.py 127.0.0.1:7480 6379
"""
import json, subprocess, sys, time, urllib.request
api = sys.argv[1]; port = sys.argv[2]
def body(n, size, words):
    text = (" ".join("w%d" % (i % words) for i in range(size // 4)))[:size] if words else "x" * size
    return json.dumps({"messages": [{"role": "tool", "format": "openai.responses",
        "item": {"type": "function_call_result", "callId": "c%d" % j, "output": text}} for j in range(n)]}).encode()
cases = [("1 000 messages, 200 B items", 1000, 200, 50), ("1 000 messages, 8 KB items (8 MB)", 1000, 8000, 2000),
         ("8 messages, 1 MB items (8 MB)", 8, 1_040_000, 2000), ("8 messages, 1 MB items, one repeated character", 8, 1_040_000, 0)]
for name, n, size, words in cases:
    best = None
    for rep in range(3):
        subprocess.run(["redis-cli", "-p", port, "slowlog", "reset"], capture_output=True)
        b = body(n, size, words)
        t = time.time()
        r = urllib.request.urlopen(urllib.request.Request("http://%s/v1/users/cost/sessions/%s-%d/messages" % (api, name[:2].strip(), rep + 10 * len(name)), data=b, headers={"Content-Type": "application/json"}))
        wall = time.time() - t
        out = subprocess.run(["redis-cli", "-p", port, "slowlog", "get", "100000"], capture_output=True, text=True).stdout.split("\n")
        # entries: id, time, duration(us), args...; take the largest duration
        durs = [int(out[i + 2]) for i in range(len(out) - 3) if out[i + 3].strip() in ("EVALSHA", "FCALL", "fcall", "evalsha") ]
        d = max(durs) if durs else -1
        best = d if best is None else min(best, d)
    print("%s: body %.1f MB, Redis time of the script %.0f ms (best of 3), last wall %.0f ms" % (name, len(b) / 1e6, best / 1000, wall * 1000))
