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

const COMPACTIONS = "/v1/users/{user_id}/sessions/{session_id}/compactions";
const noOverlays = absent || (!(await hasRoute("POST", COMPACTIONS)) && `the sidecar serves no ${COMPACTIONS} yet`);

// A compaction overlay made through the API (for other readers) never shows
// in the SDK's view: getItems reads the raw path, so it answers as
// MemorySession does, and popItem removes exactly the newest item it showed.
test("a compaction overlay stays out of the SDK's view", { skip: noOverlays }, async () => {
  const { MemorySession } = await import("@openai/agents-core");
  const sc = new Sidecar(URL_);
  const u = unique("ts-overlay");
  const s = "chat-1";
  const ours = new SidecarSession(sc, u, s);
  const ref = new MemorySession();
  const say = (text) => ({ role: "assistant", status: "completed", content: [{ type: "output_text", text }] });
  const items = [
    { role: "user", content: "Where is the dog?" },
    { type: "function_call", callId: "c1", name: "look", arguments: '{"where": "garden"}' },
    { type: "function_call_result", callId: "c1", name: "look", status: "completed", output: { type: "text", text: "in the garden" } },
    say("In the garden."),
    { role: "user", content: "And the cat?" },
    say("On the roof."),
  ];
  /** The same call on both sessions, the same answer. */
  const both = async (step) => {
    const got = await step(ours);
    assert.deepEqual(got, await step(ref), `${step}`);
    return got;
  };
  const raw = async () => (await sc.listMessages(u, s, { compacted: false, limit: 1000 })).messages.map((m) => m.id);
  const read = async () => (await sc.listMessages(u, s, { limit: 1000 })).messages.map((m) => m.id);
  const inForce = async () => (await sc.listCompactions(u, s)).compactions.map((c) => c.id);

  await both((x) => x.addItems(items));
  const ids = await raw();
  assert.equal(ids.length, items.length);
  const a = (await sc.createCompaction(u, s, { summary: "The dog is in the garden.", from_id: ids[0], to_id: ids[3] })).id;
  assert.deepEqual(await read(), [`compaction:${a}`, ids[4], ids[5]], "the overlay is in force for other readers");

  assert.deepEqual(await both((x) => x.getItems()), items);
  await both((x) => x.getItems(3));
  await both((x) => x.getItems(5));
  await both((x) => x.getItems(10));
  assert.deepEqual(await both((x) => x.popItem()), items[5]);
  assert.deepEqual(await inForce(), [a], "a pop after the range keeps the overlay");
  assert.deepEqual(await read(), [`compaction:${a}`, ids[4]]);
  assert.deepEqual(await both((x) => x.getItems()), items.slice(0, 5));

  // an overlay ending at the newest item: the pop answers that item (the
  // one getItems showed, not the summary), and the overlay ends with it
  const b = (await sc.createCompaction(u, s, { summary: "Asked about the cat.", from_id: ids[4], to_id: ids[4] })).id;
  assert.deepEqual(await read(), [`compaction:${a}`, `compaction:${b}`]);
  assert.deepEqual(await both((x) => x.getItems(1)), [items[4]]);
  assert.deepEqual(await both((x) => x.popItem()), items[4]);
  assert.deepEqual(await inForce(), [a]);
  assert.deepEqual(await read(), [`compaction:${a}`]);
  assert.deepEqual(await both((x) => x.getItems()), items.slice(0, 4));

  // popping the older overlay's endpoint ends it too; the rest stays raw
  assert.deepEqual(await both((x) => x.popItem()), items[3]);
  assert.deepEqual(await inForce(), []);
  assert.deepEqual(await read(), ids.slice(0, 3));
  await both((x) => x.addItems([say("Still in the garden.")]));
  await both((x) => x.getItems());
  await both((x) => x.getItems(2));
  await both((x) => x.clearSession());
  await both((x) => x.getItems());
  await both((x) => x.popItem());
});

// A turn whose items hold lone surrogates (a tool output cut by .slice()
// in the middle of an emoji, as JavaScript strings allow) is the SDK's own
// data: SidecarSession keeps it as MemorySession does, through addItems,
// the history transactions, replace-with-compaction and popItem.
test("items with lone surrogates, as MemorySession keeps them", { skip: absent }, async () => {
  const { MemorySession } = await import("@openai/agents-core");
  const ref = new MemorySession();
  const ours = new SidecarSession(new Sidecar(URL_), unique("ts-lone"), "chat-1");
  const log = "the log: 🐕🐕🐕".slice(0, 10); // ends in "\ud83d"
  assert.equal(log.at(-1), "\ud83d");
  const say = (text) => ({ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text }] });
  const items = [
    { role: "user", content: "Tail the log" },
    { type: "function_call", callId: "c1", name: "tail", arguments: "{}" },
    { type: "function_call_result", callId: "c1", name: "tail", status: "completed", output: { type: "text", text: log } },
    say(`It ends with ${log} and \udc00 alone`),
  ];
  const compacted = [say(`summary of ${log}`), items[2]];
  const steps = [
    (s) => s.addItems(items),
    (s) => s.getItems(),
    (s) => s.getItems(2),
    (s) => s.applyHistoryTransaction({ operationId: "op-lone-1", transaction: { type: "append_items", items: [say(`again ${log}`)] } }),
    (s) =>
      s.applyHistoryTransaction({
        operationId: "op-lone-2",
        transaction: { type: "replace_suffix", expectedSuffix: [say(`again ${log}`)], replacement: [say(`\ud800\ud800${log}`)] },
      }),
    (s) => s.getItems(),
    (s) => s.popItem(),
    (s) => s.popItem(),
    // MemorySession has no replaceHistoryWithCompaction: the runner clears, then adds
    (s) => (s instanceof SidecarSession ? s.replaceHistoryWithCompaction(compacted) : s.clearSession().then(() => s.addItems(compacted))),
    (s) => s.getItems(),
    (s) => s.popItem(),
    (s) => s.getItems(),
  ];
  for (const [i, step] of steps.entries()) {
    assert.deepEqual(await step(ours), await step(ref), `step ${i}: ${step}`);
  }
  assert.equal((await ours.getItems())[0].content[0].text, `summary of ${log}`);
});
