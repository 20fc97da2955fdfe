"""An agent's loop against the sidecar, with the Python client (clients/python).

    pip install ./clients/python      # or: PYTHONPATH=clients/python
    SIDECAR_URL=http://127.0.0.1:7480 python3 docs/examples/agent_loop.py

Starts or reuses a session, and for each question calls the model, posts the
call's usage, appends the turn as a Q&A entry; it updates a note shared with
other agents under a lock, and completes the session at the end. The model is
a stand-in (fake_llm): put your LLM call there. AGENT_USER and AGENT_SESSION
name the session (default alice / agent-loop-demo).
"""

import os
import sys

from agentsidecar import NotFound, Sidecar, SidecarError

USER = os.environ.get("AGENT_USER", "alice")
SESSION = os.environ.get("AGENT_SESSION", "agent-loop-demo")
MODEL = "gpt-4o-mini"


def fake_llm(prompt):
    """Stands in for the model: a deterministic answer to the prompt."""
    question = prompt.splitlines()[-1]
    return "An answer to: " + question


def main(sc):
    # 1. Start or reuse: a session the sidecar knows has a record; a new one
    #    is created by its first write.
    try:
        record = sc.get_session(USER, SESSION)
        history = sc.list_entries(USER, SESSION, last_n=10)
        print("session %s/%s: reused, status %s, %d entries" % (USER, SESSION, record["status"], len(history)))
    except NotFound:
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
        used = sc.record_usage(USER, SESSION, MODEL, input_text=prompt, output_text=answer,
                               idempotency_key=SESSION + "-" + turn)

        # 4. The turn itself; qa_id makes a retried append store it once.
        sc.append_entry(USER, SESSION, question, answer, qa_id=turn)
        history.append({"question": question, "answer": answer})
        print("%s: tokens_in %d, tokens_out %d, cost_usd %.9f" % (turn, used["tokens_in"], used["tokens_out"], used["cost_usd"]))

    # 5. Work shared with other agents of the same user goes under a lock
    #    (here a stand-in: one session-context note): refreshed in the
    #    background, released on exit even when the work fails.
    with sc.lock("notes-" + USER, ttl=30, wait=5, owner=SESSION) as lock:
        sc.append_context(USER, SESSION, {"id": "summary", "text": "asked %d questions" % len(history)})
        print("lock notes-%s: held by %s (pass lock.fencing_token to what the lock guards)" % (USER, lock.owner))

    # 6. The end: the record with the session's totals.
    done = sc.complete_session(USER, SESSION)
    print("completed: status %s, tokens_in %d, tokens_out %d, cost_usd %.9f" % (
        done["status"], done["tokens_in"], done["tokens_out"], done["cost_usd"]))


if __name__ == "__main__":
    try:
        with Sidecar(os.environ.get("SIDECAR_URL", "http://127.0.0.1:7480"), token=os.environ.get("SIDECAR_API_TOKEN")) as sc:
            main(sc)
    except (SidecarError, OSError) as e:
        sys.exit("agent_loop: %s" % e)
