// The real @openai/agents-core's run() with a scripted model, persisting
// into SidecarSession the turns a real agent makes: each must be stored
// whole and read back exactly as the SDK's own MemorySession holds it.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Sidecar } from "../dist/index.js";
import { SidecarSession } from "../dist/openai-agents.js";
import { URL_, hasRoute, skip, unique } from "./support.mjs";

const MESSAGES = "/v1/users/{user_id}/sessions/{session_id}/messages";
const absent = skip || (!(await hasRoute("POST", MESSAGES)) && `the sidecar serves no ${MESSAGES} yet`);

const KiB = 1024;

/** A model that answers from a script: call i returns steps[i]. */
class ScriptModel {
  constructor(steps) {
    this.steps = steps;
    this.calls = 0;
  }
  async getResponse() {
    const { Usage } = await import("@openai/agents-core");
    return { usage: new Usage(), output: this.steps[this.calls++] ?? [] };
  }
  // eslint-disable-next-line require-yield
  async *getStreamedResponse() {
    throw new Error("this model is not streamed");
  }
}

const call = (id, size) => ({
  type: "function_call",
  callId: id,
  name: "read_file",
  arguments: JSON.stringify({ size }),
  status: "completed",
});
const say = (text) => ({ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text }] });

/** Runs the same scripted turn on a MemorySession and a SidecarSession. */
async function both(steps, input = "go") {
  const { Agent, MemorySession, run, setTracingDisabled, tool } = await import("@openai/agents-core");
  setTracingDisabled(true);
  const readFile = tool({
    name: "read_file",
    description: "reads a file of the size asked for",
    parameters: { type: "object", properties: { size: { type: "integer" } }, required: ["size"], additionalProperties: false },
    strict: true,
    execute: async ({ size }) => "f".repeat(size),
  });
  const sc = new Sidecar(URL_);
  const user = unique("ts-sizes");
  const sessions = { memory: new MemorySession(), sidecar: new SidecarSession(sc, user, "chat") };
  for (const session of Object.values(sessions)) {
    const agent = new Agent({ name: "reader", instructions: "read", model: new ScriptModel(steps), tools: [readFile] });
    const result = await run(agent, input, { session, maxTurns: steps.length + 1 });
    assert.equal(result.finalOutput, "done");
  }
  const want = await sessions.memory.getItems();
  // a new object, as another process would make
  const ours = new SidecarSession(sc, user, "chat");
  return { want, got: await ours.getItems(), ours };
}

test("a turn of 60 parallel tool calls (122 items in one addItems)", { skip: absent }, async () => {
  const { want, got } = await both([Array.from({ length: 60 }, (_, i) => call(`c${i}`, 100)), [say("done")]]);
  assert.equal(want.length, 122);
  assert.deepEqual(got, want);
});

test("a 51-step tool loop", { skip: absent }, async () => {
  const steps = Array.from({ length: 51 }, (_, i) => [call(`s${i}`, 50)]);
  steps.push([say("done")]);
  const { want, got } = await both(steps);
  assert.equal(want.length, 104);
  assert.deepEqual(got, want);
});

test("a 300 KiB tool output", { skip: absent }, async () => {
  const { want, got } = await both([[call("big", 300 * KiB)], [say("done")]]);
  assert.equal(want.length, 4);
  assert.deepEqual(got, want);
});

test("five 250 KiB outputs in one turn", { skip: absent }, async () => {
  const { want, got, ours } = await both([Array.from({ length: 5 }, (_, i) => call(`f${i}`, 250 * KiB)), [say("done")]]);
  assert.equal(want.length, 12);
  assert.deepEqual(got, want);
  assert.deepEqual(await ours.getItems(7), want.slice(-7));
});

test("the 150-item restore after a failed compaction", { skip: absent }, async () => {
  // what OpenAIResponsesCompactionSession does when its compaction write
  // fails: put back the items it read, in one addItems
  const s = new SidecarSession(new Sidecar(URL_), unique("ts-restore"), "chat");
  const items = Array.from({ length: 150 }, (_, i) =>
    i % 2 === 0 ? { role: "user", content: `question ${i}` } : say(`answer ${i}`),
  );
  await s.addItems(items);
  const before = await s.getItems();
  await s.clearSession();
  await s.addItems(before);
  assert.deepEqual(await s.getItems(), items);
});

test("getItems(limit) is exact whatever the count and the size", { skip: absent }, async () => {
  const sc = new Sidecar(URL_);
  const many = new SidecarSession(sc, unique("ts-exact"), "many");
  const items = Array.from({ length: 1100 }, (_, i) => ({ role: "user", content: `m${i}` }));
  await many.addItems(items.slice(0, 1000));
  await many.addItems(items.slice(1000));
  assert.deepEqual(await many.getItems(1050), items.slice(-1050));
  assert.deepEqual(await many.getItems(2000), items);
  assert.equal((await many.getItems()).length, 1100);
  // 20 items of 240 KiB: 4.7 MiB, past one answer's cap (4 MiB by default)
  const big = new SidecarSession(sc, unique("ts-exact"), "big");
  const heavy = Array.from({ length: 20 }, (_, i) => ({ role: "user", content: `${i}`.padEnd(240 * KiB, "x") }));
  await big.addItems(heavy);
  const page = await sc.listMessages(big.userId, big.sessionId, { order: "desc", limit: 20 });
  assert.ok(page.messages.length < 20, "one page holds them all: the test does not cross a cut");
  assert.deepEqual(await big.getItems(20), heavy);
  assert.deepEqual(await big.getItems(17), heavy.slice(-17));
  assert.deepEqual(await big.getItems(), heavy);
});
