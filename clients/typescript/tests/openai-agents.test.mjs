// SidecarSession over the live messages API, once the sidecar serves it.
// That it implements @openai/agents-core's Session is checked by tsc when
// the client is built (src/openai-agents.ts: `implements Session`).
import assert from "node:assert/strict";
import { test } from "node:test";

import { Sidecar } from "../dist/index.js";
import { FORMAT, SidecarSession } from "../dist/openai-agents.js";
import { URL_, hasRoute, skip, unique } from "./support.mjs";

const MESSAGES = "/v1/users/{user_id}/sessions/{session_id}/messages";

test("shape", async () => {
  const s = new SidecarSession(new Sidecar("http://127.0.0.1:1"), "alice", "chat-1");
  assert.equal(await s.getSessionId(), "chat-1");
  for (const m of ["getItems", "addItems", "popItem", "clearSession"]) assert.equal(typeof s[m], "function", m);
  assert.equal(FORMAT, "openai.responses");
});

const absent = skip || (!((await hasRoute("POST", MESSAGES)) && (await hasRoute("POST", MESSAGES + "/pop"))) && `the sidecar serves no ${MESSAGES} yet`);

// The same calls on the SDK's own MemorySession and on SidecarSession must
// answer the same, step by step.
test("behaves as the SDK's MemorySession", { skip: absent }, async () => {
  const { MemorySession } = await import("@openai/agents-core");
  const ref = new MemorySession();
  const ours = new SidecarSession(new Sidecar(URL_), unique("ts-agents"), "chat-1");
  const items = [
    { role: "user", content: "Where is the dog? 🐕" },
    { type: "function_call", callId: "c1", name: "look", arguments: '{"where": "garden"}' },
    { type: "function_call_result", callId: "c1", name: "look", status: "completed", output: { type: "text", text: "in the garden" } },
    { role: "assistant", status: "completed", content: [{ type: "output_text", text: "In the garden." }] },
  ];
  const steps = [
    (s) => s.getItems(),
    (s) => s.popItem(),
    (s) => s.addItems(items.slice(0, 2)),
    (s) => s.addItems([]),
    (s) => s.addItems(items.slice(2)),
    (s) => s.getItems(),
    (s) => s.getItems(2),
    (s) => s.getItems(10),
    (s) => s.popItem(),
    (s) => s.getItems(),
    (s) => s.clearSession(),
    (s) => s.getItems(),
    (s) => s.popItem(),
    (s) => s.addItems(items.slice(0, 1)),
    (s) => s.getItems(1),
  ];
  for (const [i, step] of steps.entries()) {
    assert.deepEqual(await step(ours), await step(ref), `step ${i}: ${step}`);
  }
});
