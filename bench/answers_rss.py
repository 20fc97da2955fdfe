"""Peak RSS of a running sidecar answering 8 parallel reads of a 64 MB
session (BENCHMARKS.md, "In-flight byte budget"): 64 appends of four
250 KB tool outputs, then 8 parallel GET .../messages?limit=1000; RSS is
the process's VmHWM from /proc.

    python3 bench/answers_rss.py 127.0.0.1:7480 <sidecar pid>
"""
import json, sys, threading, urllib.request
api = sys.argv[1]; pid = int(sys.argv[2])
url = "http://%s/v1/users/mem/sessions/big/messages" % api
item = {"type": "function_call_result", "callId": "c", "output": "x" * 250000}
for i in range(64):
    msgs = [{"role": "tool", "format": "openai.responses", "item": dict(item, callId="c%d_%d" % (i, j))} for j in range(4)]
    body = json.dumps({"messages": msgs}).encode()
    urllib.request.urlopen(urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})).read()
def hwm():
    for l in open("/proc/%d/status" % pid):
        if l.startswith("VmHWM"): return int(l.split()[1]) // 1024
print("after 64 appends of 1 MB: peak RSS %d MiB" % hwm())
res = []
def read():
    try:
        r = urllib.request.urlopen(url + "?limit=1000", timeout=120)
        b = r.read(); res.append((r.status, len(json.loads(b)["messages"]), r.headers.get("Sidecar-Truncated")))
    except urllib.error.HTTPError as e:
        res.append((e.code, json.loads(e.read())["error"]["code"], None))
ts = [threading.Thread(target=read) for _ in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]
print("8 parallel reads:", res)
print("peak RSS %d MiB" % hwm())
