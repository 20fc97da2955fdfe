"""What the suites share: the sidecar under test (from the environment the
Go harness in clients/ sets), the served OpenAPI document, a recorder."""

import json
import os
import re
import unittest
import urllib.request
import uuid

from agentsidecar import Sidecar

URL = os.environ.get("SIDECAR_URL", "")
OPS_URL = os.environ.get("SIDECAR_OPS_URL", "")
TOKEN_URL = os.environ.get("SIDECAR_TOKEN_URL", "")
TOKEN = os.environ.get("SIDECAR_TOKEN", "")

if not URL:
    raise unittest.SkipTest("SIDECAR_URL is not set: run these through `go test ./clients/`")


def unique(prefix: str) -> str:
    """An id no other test uses (the suites share one Redis)."""
    return "%s-%s" % (prefix, uuid.uuid4().hex[:12])


_doc = None


def document() -> dict:
    """The served /openapi.json."""
    global _doc
    if _doc is None:
        with urllib.request.urlopen(OPS_URL + "/openapi.json", timeout=10) as r:
            _doc = json.load(r)
    return _doc


def operations():
    """(operationId, METHOD, path template) of every operation served that
    the client has a method for (not the MCP route: MCP clients speak it)."""
    for p, item in document()["paths"].items():
        for m, op in item.items():
            if m in ("get", "put", "post", "patch", "delete") and op.get("x-client-method", True):
                yield op["operationId"], m.upper(), p


def has_route(method: str, template: str) -> bool:
    return any(m == method and p == template for _, m, p in operations())


def snake(op_id: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", op_id).lower().replace("t_t_l", "ttl")


def template_regex(template: str):
    return re.compile("^" + re.sub(r"\\\{[a-z_]+\\\}", "[^/]+", re.escape(template)) + "$")


def recording(sc: Sidecar) -> list:
    """Record every (method, path) sc sends, in order."""
    sent = []
    t = sc._t
    once = t._once

    def record(method, target, data, headers, safe, timeout):
        sent.append((method, target.split("?")[0], dict(headers)))
        return once(method, target, data, headers, safe, timeout)

    t._once = record
    return sent
