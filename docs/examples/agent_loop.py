"""An agent's loop against the sidecar: Python 3.9+, standard library only.

    SIDECAR_URL=http://127.0.0.1:7480 python3 docs/examples/agent_loop.py

Starts or reuses a session, and for each question calls the model, posts the
call's usage, appends the turn as a Q&A entry; it updates a note shared with
other agents under a lock, and completes the session at the end. The model is
a stand-in (fake_llm): put your LLM call there. AGENT_USER and AGENT_SESSION
name the session (default alice / agent-loop-demo).
"""

import json
import os
import sys
import urllib.error
import urllib.request

BASE = os.environ.get("SIDECAR_URL", "http://127.0.0.1:7480").rstrip("/")
USER = os.environ.get("AGENT_USER", "alice")
SESSION = os.environ.get("AGENT_SESSION", "agent-loop-demo")
S = "/v1/users/%s/sessions/%s" % (USER, SESSION)
MODEL = "gpt-4o-mini"


class SidecarError(Exception):
    """An error answer: its status, and the envelope's code and message."""

    def __init__(self, status, code, message):
        super().__init__("%d %s: %s" % (status, code, message))
        self.status, self.code = status, code


def call(method, path, body=None, headers=None):
    """One API call; returns the decoded answer (None for 204)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(BASE + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        req.add_header(name, value)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            raw = resp.read()
            return json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        err = json.loads(e.read() or b"{}").get("error", {})
        raise SidecarError(e.code, err.get("code", ""), err.get("message", "")) from None


def fake_llm(prompt):
    """Stands in for the model: a deterministic answer to the prompt."""
    question = prompt.splitlines()[-1]
    return "An answer to: " + question


def main():
    # 1. Start or reuse: a session the sidecar knows has a record; a new one
    #    is created by its first write.
    try:
        record = call("GET", S)
        history = call("GET", S + "/entries?last_n=10")
        print("session %s/%s: reused, status %s, %d entries" % (USER, SESSION, record["status"], len(history)))
    except SidecarError as e:
        if e.code != "not_found":
            raise
        history = []
        print("session %s/%s: new" % (USER, SESSION))

    questions = ["Where is the dog?", "What does it eat?", "When does it sleep?"]
    for i, question in enumerate(questions, start=len(history) + 1):
        turn = "turn-%d" % i
        # 2. The context the model sees: earlier turns, then the question.
        prompt = "\n".join("Q: %s\nA: %s" % (h["question"], h["answer"]) for h in history)
        prompt = (prompt + "\n" if prompt else "") + question
        answer = fake_llm(prompt)

        # 3. After each LLM call, its usage. With no token counts the
        #    sidecar estimates them from input_text and output_text; the
        #    Idempotency-Key makes a retried post count once.
        used = call("POST", S + "/usage",
                    {"model": MODEL, "input_text": prompt, "output_text": answer},
                    headers={"Idempotency-Key": SESSION + "-" + turn})

        # 4. The turn itself; qa_id makes a retried append store it once.
        call("POST", S + "/entries", {"question": question, "answer": answer, "qa_id": turn})
        history.append({"question": question, "answer": answer})
        print("%s: tokens_in %d, tokens_out %d, cost_usd %.9f" % (turn, used["tokens_in"], used["tokens_out"], used["cost_usd"]))

    # 5. Work shared with other agents of the same user goes under a lock
    #    (here a stand-in: one session-context note); release it even when
    #    the work fails.
    lock = call("POST", "/v1/locks/notes-" + USER, {"owner": SESSION, "ttl_ms": 30000, "wait_ms": 5000})
    try:
        call("POST", S + "/context", {"id": "summary", "text": "asked %d questions" % len(history)})
        print("lock notes-%s: held by %s (pass lock[\"fencing_token\"] to what the lock guards)" % (USER, lock["owner"]))
    finally:
        call("DELETE", "/v1/locks/notes-" + USER, {"token": lock["token"]})

    # 6. The end: the record with the session's totals.
    done = call("POST", S + "/complete")
    print("completed: status %s, tokens_in %d, tokens_out %d, cost_usd %.9f" % (
        done["status"], done["tokens_in"], done["tokens_out"], done["cost_usd"]))


if __name__ == "__main__":
    try:
        main()
    except (SidecarError, urllib.error.URLError) as e:
        sys.exit("agent_loop: %s" % e)
