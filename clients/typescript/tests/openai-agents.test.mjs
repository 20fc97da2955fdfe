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

test("round trip", { skip: absent }, async () => {
  const session = new SidecarSession(new Sidecar(URL_), unique("ts-agents"), "chat-1");
  const items = [
    { role: "user", content: "Where is the dog? 🐕" },
    { type: "function_call", callId: "c1", name: "look", arguments: '{"where": "garden"}' },
    { type: "function_call_result", callId: "c1", name: "look", status: "completed", output: { type: "text", text: "in the garden" } },
    { role: "assistant", status: "completed", content: [{ type: "output_text", text: "In the garden." }] },
  ];
  await session.addItems(items.slice(0, 2));
  await session.addItems(items.slice(2));
  assert.deepEqual(await session.getItems(), items);
  assert.deepEqual(await session.getItems(2), items.slice(2));
  assert.deepEqual(await session.popItem(), items[3]);
  assert.deepEqual(await session.getItems(), items.slice(0, 3));
  await session.clearSession();
  assert.deepEqual(await session.getItems(), []);
  assert.equal(await session.popItem(), undefined);
});
