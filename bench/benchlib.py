"""What the bench scripts share: a free loopback port, waiting for a
redis-server or a sidecar to answer, and sending many calls on one
pipeline. Import it from a script of this folder (python3 bench/x.py puts
the folder first on sys.path)."""

import socket
import time
import urllib.request

import redis


def free_port():
    """A loopback TCP port no one listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_redis(r, tries, pause):
    """PINGs r until it answers, at most tries times pause seconds apart:
    True once it answered, False if it never did."""
    for _ in range(tries):
        try:
            r.ping()
            return True
        except redis.ConnectionError:
            time.sleep(pause)
    return False


def wait_ready(ops_port, tries, pause=0.05):
    """GETs a sidecar's /readyz on ops_port until it answers 200, at most
    tries times: True once it did, False if it never did."""
    for _ in range(tries):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{ops_port}/readyz", timeout=1)
            return True
        except Exception:
            time.sleep(pause)
    return False


def pipelined(p, n, send):
    """Calls send(i) for i in range(n), each queuing a command on pipeline
    p, and executes p every 500 commands and at the end."""
    for i in range(n):
        send(i)
        if i % 500 == 499:
            p.execute()
    p.execute()
