"""A worker process of test_lock: takes the lock ROUNDS times and, while
holding it, appends "enter <fence>" and "exit <fence>" lines to the shared
log (O_APPEND), with a pause in between so an overlap would show."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from agentsidecar import Sidecar  # noqa: E402

url, name, log, rounds, who = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
sc = Sidecar(url)
fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
for _ in range(rounds):
    with sc.lock(name, ttl=5, wait=30, owner=who) as lk:
        os.write(fd, ("enter %d %s\n" % (lk.fencing_token, who)).encode())
        time.sleep(0.02)
        os.write(fd, ("exit %d %s\n" % (lk.fencing_token, who)).encode())
os.close(fd)
