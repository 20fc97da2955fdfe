// SidecarSession's optional interfaces of @openai/agents-core (history
// transactions, history mutations, replace-with-compaction, runCompaction,
// the run context) against the SDK's own MemorySession: the SDK's
// memorySession tests ported (each run on both), the real run() with a
// scripted model (an output guardrail's blocked turn, compaction, two
// processes sharing one session), and a random differential test.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { Sidecar } from "../dist/index.js";
import { SidecarSession } from "../dist/openai-agents.js";
import { URL_, hasRoute, skip, unique } from "./support.mjs";

const TX = "/v1/users/{user_id}/sessions/{session_id}/messages/transactions";
const absent = skip || (!(await hasRoute("POST", TX)) && `the sidecar serves no ${TX} yet`);

const user = (text) => ({ role: "user", content: [{ type: "input_text", text }] });
const say = (text) => ({ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text }] });
const fcall = (callId, args, id) => ({ type: "function_call", ...(id ? { id } : {}), callId, name: "lookup", status: "completed", arguments: args });

/** The two kinds of session, each made holding initial items. */
const kinds = {
  memory: async (initial = []) => {
    const { MemorySession } = await import("@openai/agents-core");
    return new MemorySession({ initialItems: initial });
  },
  sidecar: async (initial = []) => {
    const s = new SidecarSession(new Sidecar(URL_), unique("ts-tx"), "chat");
    if (initial.length) await s.addItems(initial);
    return s;
  },
};

/** A test of the SDK's memorySession.test.ts, run on both kinds of session. */
function ported(name, body) {
  for (const [kind, make] of Object.entries(kinds)) {
    test(`${name} (${kind})`, { skip: absent }, () => body(make));
  }
}

ported("stores and retrieves items", async (make) => {
  const initial = [user("hello")];
  const s = await make(initial);
  assert.deepEqual(await s.getItems(), initial);
  const more = [user("one"), user("two")];
  await s.addItems(more);
  assert.deepEqual(await s.getItems(), [...initial, ...more]);
  assert.deepEqual(await s.getItems(2), more);
  assert.deepEqual(await s.popItem(), more[1]);
  assert.deepEqual(await s.getItems(), [...initial, more[0]]);
  await s.clearSession();
  assert.deepEqual(await s.getItems(), []);
  assert.deepEqual(await s.getItems(3), []);
  assert.equal(await s.popItem(), undefined);
});

ported("applies history mutations atomically", async (make) => {
  const s = await make([user("start"), fcall("call-1", '{"ok":false}', "call-old-1"), fcall("call-1", '{"duplicate":true}', "call-old-2")]);
  const replacement = fcall("call-1", '{"ok":true}', "call-new");
  await s.applyHistoryMutations({ mutations: [{ type: "replace_function_call", callId: "call-1", replacement }] });
  assert.deepEqual(await s.getItems(), [user("start"), replacement]);
  // a call the history does not hold: nothing changes
  await s.applyHistoryMutations({ mutations: [{ type: "replace_function_call", callId: "call-9", replacement: fcall("call-9", "{}") }] });
  assert.deepEqual(await s.getItems(), [user("start"), replacement]);
  // several mutations at once, a missing call among them
  await s.addItems([fcall("call-2", "{}"), say("between"), fcall("call-2", '{"again":true}')]);
  const r1 = fcall("call-1", '{"v":1}');
  const r2 = fcall("call-2", '{"v":2}');
  await s.applyHistoryMutations({
    mutations: [
      { type: "replace_function_call", callId: "call-2", replacement: r2 },
      { type: "replace_function_call", callId: "call-8", replacement: fcall("call-8", "{}") },
      { type: "replace_function_call", callId: "call-1", replacement: r1 },
    ],
  });
  assert.deepEqual(await s.getItems(), [user("start"), r1, r2, say("between")]);
});

ported("applies append transactions idempotently", async (make) => {
  const s = await make([user("start")]);
  const appended = user("committed");
  const args = { operationId: "operation-append-1", transaction: { type: "append_items", items: [appended] } };
  await s.applyHistoryTransaction(args);
  appended.content = "mutated";
  await s.addItems([user("later")]);
  await s.applyHistoryTransaction({ operationId: args.operationId, transaction: { type: "append_items", items: [user("committed")] } });
  assert.deepEqual(await s.getItems(), [user("start"), user("committed"), user("later")]);
});

ported("replaces an exact history suffix idempotently", async (make) => {
  const prefix = user("start");
  const expected = user("blocked");
  const replacement = user("accepted");
  const s = await make([prefix, expected]);
  const tx = { operationId: "operation-replace-1", transaction: { type: "replace_suffix", expectedSuffix: [expected], replacement: [replacement] } };
  await s.applyHistoryTransaction(tx);
  await s.addItems([user("later")]);
  await s.applyHistoryTransaction(tx);
  assert.deepEqual(await s.getItems(), [prefix, replacement, user("later")]);
});

ported("rejects a suffix mismatch without recording the operation", async (make) => {
  const start = user("start");
  const s = await make([start]);
  await assert.rejects(
    s.applyHistoryTransaction({
      operationId: "operation-replace-after-conflict",
      transaction: { type: "replace_suffix", expectedSuffix: [user("different")], replacement: [user("accepted")] },
    }),
    /suffix no longer matches/,
  );
  assert.deepEqual(await s.getItems(), [start]);
  await s.applyHistoryTransaction({
    operationId: "operation-replace-after-conflict",
    transaction: { type: "replace_suffix", expectedSuffix: [start], replacement: [user("accepted")] },
  });
  assert.deepEqual(await s.getItems(), [user("accepted")]);
});

ported("rejects operation ID reuse with different content", async (make) => {
  const s = await make();
  await s.applyHistoryTransaction({ operationId: "operation-conflict", transaction: { type: "append_items", items: [user("first")] } });
  await assert.rejects(
    s.applyHistoryTransaction({ operationId: "operation-conflict", transaction: { type: "append_items", items: [user("second")] } }),
    /already applied with a different transaction/,
  );
  assert.deepEqual(await s.getItems(), [user("first")]);
});

ported("records an empty append transaction", async (make) => {
  const s = await make();
  await s.applyHistoryTransaction({ operationId: "operation-empty", transaction: { type: "append_items", items: [] } });
  await assert.rejects(
    s.applyHistoryTransaction({ operationId: "operation-empty", transaction: { type: "append_items", items: [user("unexpected")] } }),
    /already applied with a different transaction/,
  );
  assert.deepEqual(await s.getItems(), []);
});

ported("resets transaction identities when the session is cleared", async (make) => {
  const s = await make();
  const tx = { operationId: "operation-after-reset", transaction: { type: "append_items", items: [user("committed")] } };
  await s.applyHistoryTransaction(tx);
  await s.clearSession();
  await s.applyHistoryTransaction(tx);
  assert.deepEqual(await s.getItems(), [user("committed")]);
});

ported("rejects invalid transaction input before mutation", async (make) => {
  const start = user("start");
  const s = await make([start]);
  await assert.rejects(s.applyHistoryTransaction({ operationId: "   ", transaction: { type: "append_items", items: [] } }), /operationId must be a non-empty string/);
  await assert.rejects(s.applyHistoryTransaction({ operationId: "operation-unknown", transaction: { type: "unknown" } }), /Unsupported session history transaction type/);
  await assert.rejects(s.applyHistoryTransaction({ operationId: "operation-missing-transaction", transaction: null }), /transaction must be an object/);
  await assert.rejects(
    s.applyHistoryTransaction({ operationId: "operation-invalid-item", transaction: { type: "append_items", items: [42] } }),
    /items contain invalid or unsupported data/,
  );
  assert.deepEqual(await s.getItems(), [start]);
});

ported("rejects unsupported transaction metadata before mutation", async (make) => {
  const start = user("start");
  const s = await make([start]);
  const withDate = { ...user("unsupported"), providerData: { timestamp: new Date(0) } };
  const cycle = {};
  cycle.self = cycle;
  const withCycle = { ...user("cyclic"), providerData: cycle };
  const withBigInt = { ...user("bigint"), providerData: { value: 42n } };
  for (const [operationId, items] of [["operation-date", [withDate]], ["operation-cycle", [withCycle]], ["operation-bigint", [withBigInt]], ["operation-sparse", new Array(1)]]) {
    await assert.rejects(s.applyHistoryTransaction({ operationId, transaction: { type: "append_items", items } }), /items contain invalid or unsupported data/);
  }
  assert.deepEqual(await s.getItems(), [start]);
});

ported("rejects unexpected transaction fields before mutation", async (make) => {
  const start = user("start");
  const s = await make([start]);
  await assert.rejects(
    s.applyHistoryTransaction({
      operationId: "operation-unexpected-append-field",
      transaction: { type: "append_items", items: [user("unsupported")], metadata: { attempt: 1 } },
    }),
    /append transaction fields are invalid/,
  );
  await assert.rejects(
    s.applyHistoryTransaction({
      operationId: "operation-unexpected-suffix-field",
      transaction: { type: "replace_suffix", expectedSuffix: [start], replacement: [user("unsupported")], metadata: { attempt: 1 } },
    }),
    /suffix transaction fields are invalid/,
  );
  assert.deepEqual(await s.getItems(), [start]);
  const retry = user("retry");
  await s.applyHistoryTransaction({ operationId: "operation-unexpected-append-field", transaction: { type: "append_items", items: [retry] } });
  assert.deepEqual(await s.getItems(), [start, retry]);
});

ported("canonicalizes ordinary object prototypes for retries and suffixes", async (make) => {
  const s = await make();
  const appended = { ...user("canonical"), providerData: Object.assign(Object.create(null), { source: "provider" }) };
  await s.applyHistoryTransaction({ operationId: "operation-canonical-append", transaction: { type: "append_items", items: [appended] } });
  const [roundTripped] = await s.getItems();
  await s.applyHistoryTransaction({ operationId: "operation-canonical-append", transaction: { type: "append_items", items: [roundTripped] } });
  await s.applyHistoryTransaction({
    operationId: "operation-canonical-replace",
    transaction: { type: "replace_suffix", expectedSuffix: [appended], replacement: [user("replaced")] },
  });
  assert.deepEqual(await s.getItems(), [user("replaced")]);
});

// Not in the SDK's tests: what only a shared store shows.

test("SidecarSession is every optional kind of session the SDK detects", async () => {
  const core = await import("@openai/agents-core");
  const s = new SidecarSession(new Sidecar("http://127.0.0.1:1"), "alice", "chat-1");
  for (const is of [
    "isRunContextAwareSession",
    "isSessionHistoryTransactionAwareSession",
    "isSessionHistoryRewriteAwareSession",
    "isOpenAIResponsesCompactionAwareSession",
  ]) {
    assert.equal(core[is](s), true, is);
  }
  assert.equal(typeof s.replaceHistoryWithCompaction, "function");
  assert.equal(await s.runCompaction(), null, "no compact function: nothing to do");
});

test("a suffix compared as JSON values, member order aside; a repeat on another object", { skip: absent }, async () => {
  const sc = new Sidecar(URL_);
  const u = unique("ts-tx-order");
  const a = new SidecarSession(sc, u, "chat");
  await a.addItems([user("start"), { type: "function_call", callId: "c1", name: "f", arguments: "{}" }]);
  // the same item with its members in another order
  const reordered = { arguments: "{}", name: "f", callId: "c1", type: "function_call" };
  const tx = { operationId: "op-order", transaction: { type: "replace_suffix", expectedSuffix: [reordered], replacement: [say("done")] } };
  await a.applyHistoryTransaction(tx);
  // the runner retrying from another pod: the same operation, nothing applied twice
  const b = new SidecarSession(sc, u, "chat");
  await b.applyHistoryTransaction(tx);
  assert.deepEqual(await b.getItems(), [user("start"), say("done")]);
});

test("replaceHistoryWithCompaction is one transaction: readers see before or after", { skip: absent }, async () => {
  const sc = new Sidecar(URL_);
  const u = unique("ts-tx-compact");
  const s = new SidecarSession(sc, u, "chat");
  const before = Array.from({ length: 150 }, (_, i) => (i % 2 ? say(`answer ${i}`) : user(`question ${i}`)));
  await s.addItems(before);
  const after = [{ type: "compaction", encrypted_content: "summary" }, user("question 148"), say("answer 149")];
  const reader = new SidecarSession(sc, u, "chat");
  let done = false;
  const seen = new Set();
  const reads = (async () => {
    while (!done) seen.add((await reader.getItems()).length);
  })();
  await s.replaceHistoryWithCompaction(after);
  done = true;
  await reads;
  assert.deepEqual(await reader.getItems(), after);
  for (const n of seen) assert.ok(n === 150 || n === 3, `a reader saw ${n} items`);
});

test("a compaction never erases a turn another pod appended after it read", { skip: absent }, async () => {
  const sc = new Sidecar(URL_);
  const u = unique("ts-tx-race");
  const other = new SidecarSession(sc, u, "chat");
  const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };
  // runCompaction: the other pod's turn lands while the model summarises
  const s = new SidecarSession(sc, u, "chat", {
    compact: async ({ items }) => {
      await other.addItems([user("late question")]);
      return { items: [{ type: "compaction", encrypted_content: `summary of ${items.length}` }], usage };
    },
  });
  await s.addItems([user("q"), say("a")]);
  assert.deepEqual(await s.runCompaction(), { usage }, "the compaction's usage is still answered");
  assert.deepEqual(await other.getItems(), [user("q"), say("a"), user("late question")], "nothing replaced");
  // replaceHistoryWithCompaction after the runner's read: the same precondition
  const read = await s.getItems();
  await other.addItems([say("late answer")]);
  await assert.rejects(s.replaceHistoryWithCompaction([{ type: "compaction", encrypted_content: "x" }]),
    (e) => e.status === 409 && e.code === "suffix_mismatch");
  assert.deepEqual(await other.getItems(), [...read, say("late answer")]);
  // read again, nothing in between: applied
  await s.getItems();
  await s.replaceHistoryWithCompaction([{ type: "compaction", encrypted_content: "y" }]);
  assert.deepEqual(await other.getItems(), [{ type: "compaction", encrypted_content: "y" }]);
});

/** A model that answers from a script and records the input of each call. */
class ScriptModel {
  constructor(steps) {
    this.steps = steps;
    this.inputs = [];
  }
  async getResponse(request) {
    const { Usage } = await import("@openai/agents-core");
    this.inputs.push(structuredClone(request.input));
    return { usage: new Usage(), output: this.steps[this.inputs.length - 1] ?? [] };
  }
  // eslint-disable-next-line require-yield
  async *getStreamedResponse() {
    throw new Error("this model is not streamed");
  }
}

/** Counts the calls of session's methods named. */
function spy(session, names) {
  const calls = Object.fromEntries(names.map((n) => [n, 0]));
  for (const n of names) {
    const f = session[n].bind(session);
    session[n] = (...args) => {
      calls[n]++;
      return f(...args);
    };
  }
  return calls;
}

test("run(): an output guardrail's blocked turn persists as on MemorySession", { skip: absent }, async () => {
  const core = await import("@openai/agents-core");
  const { Agent, MemorySession, run, setTracingDisabled } = core;
  setTracingDisabled(true);
  const out = {};
  for (const [kind, session] of [
    ["memory", new MemorySession()],
    ["sidecar", new SidecarSession(new Sidecar(URL_), unique("ts-guard"), "chat")],
  ]) {
    const calls = spy(session, ["applyHistoryTransaction", "addItems"]);
    const agent = new Agent({
      name: "guarded",
      model: new ScriptModel([[say("the secret is 42")]]),
      outputGuardrails: [{ name: "no secrets", execute: async () => ({ outputInfo: undefined, tripwireTriggered: true }) }],
    });
    await assert.rejects(run(agent, "tell me", { session }), (e) => e instanceof core.OutputGuardrailTripwireTriggered);
    // the next turn sees what the blocked one left
    const next = new Agent({ name: "next", model: new ScriptModel([[say("ok")]]) });
    await run(next, "again", { session });
    out[kind] = { items: await session.getItems(), calls };
  }
  assert.deepEqual(out.sidecar.items, out.memory.items);
  assert.deepEqual(out.sidecar.calls, out.memory.calls, "the runner uses both sessions alike");
});

test("run(): runCompaction replaces the history with the compact function's output", { skip: absent }, async () => {
  const { Agent, Usage, run, setTracingDisabled } = await import("@openai/agents-core");
  setTracingDisabled(true);
  const seen = [];
  const s = new SidecarSession(new Sidecar(URL_), unique("ts-compact"), "chat", {
    compact: ({ items }) => {
      seen.push(items.length);
      if (items.length < 4) return null; // below the threshold: skipped
      return { items: [{ type: "compaction", encrypted_content: `summary of ${items.length}` }, items.at(-1)], usage: new Usage() };
    },
  });
  const agent = new Agent({ name: "a", model: new ScriptModel([[say("one")], [say("two")]]) });
  await run(agent, "first", { session: s });
  await run(agent, "second", { session: s });
  assert.deepEqual(seen, [2, 4], "called after each turn with the whole history");
  assert.deepEqual(await s.getItems(), [{ type: "compaction", encrypted_content: "summary of 4" }, say("two")]);
});

test("run() across two processes: one writes a turn, another resumes", { skip: absent }, async () => {
  const { Agent, MemorySession, run, setTracingDisabled } = await import("@openai/agents-core");
  setTracingDisabled(true);
  const worker = fileURLToPath(new URL("./openai-agents-worker.mjs", import.meta.url));
  const u = unique("ts-procs");
  const turn = async (n) => JSON.parse((await promisify(execFile)(process.execPath, [worker, URL_, u, "chat", String(n)])).stdout);
  const first = await turn(0);
  const second = await turn(1);
  assert.deepEqual(first.inputs[0].length, 1, "a new session: the first turn's input alone");
  // the second process's model got the first turn from the sidecar
  const ref = new MemorySession();
  const model = new ScriptModel([[say("turn 0")], [say("turn 1")]]);
  for (const input of ["question 0", "question 1"]) {
    await run(new Agent({ name: "a", model }), input, { session: ref });
  }
  assert.deepEqual(second.inputs[0], model.inputs[1]);
  assert.deepEqual(second.items, await ref.getItems());
});

// A random differential test: the same random calls, the new transactions
// and the framework sizes among them, on MemorySession and SidecarSession,
// answer the same and leave the same history after each step.
test("random operations with transactions match MemorySession", { skip: absent }, async () => {
  const { MemorySession } = await import("@openai/agents-core");
  let seed = 32;
  const rand = (n) => {
    // mulberry32: every residue comes up (an LCG's low bits cycle)
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) % n;
  };
  const KiB = 1024;
  let serial = 0;
  const anItem = () => {
    serial++;
    switch (rand(5)) {
      case 0:
        return user(`q${serial}`);
      case 1:
        return fcall(`c${rand(4)}`, `{"n":${serial}}`);
      case 2:
        return { type: "function_call_result", callId: `c${rand(4)}`, name: "lookup", status: "completed", output: { type: "text", text: `r${serial}` } };
      default:
        return say(`a${serial}`);
    }
  };
  const items = (n) => Array.from({ length: n }, anItem);
  const big = (n, size) => Array.from({ length: n }, (_, i) => say(`${serial++}-${i}`.padEnd(size, "x")));
  const ops = [];
  const used = [];
  const tally = {};
  const outcome = async (p) => {
    try {
      return { ok: await p };
    } catch (e) {
      return { failed: /already applied|no longer matches|invalid|Unsupported/.exec(e.message)?.[0] ?? e.message };
    }
  };
  for (let round = 0; round < 4; round++) {
    const ref = new MemorySession();
    const ours = new SidecarSession(new Sidecar(URL_), unique("ts-tx-random"), "chat");
    for (let step = 0; step < 60; step++) {
      const history = await ref.getItems();
      let op;
      switch (rand(12)) {
        case 0: {
          const add = items(rand(4));
          op = (s) => s.addItems(add);
          break;
        }
        case 1: {
          const n = rand(5);
          op = (s) => s.getItems(n);
          break;
        }
        case 2:
          op = (s) => s.popItem();
          break;
        case 3:
          op = rand(4) === 0 ? (s) => s.clearSession() : (s) => s.getItems();
          break;
        case 4:
        case 5: {
          const id = `op-${round}-${step}`;
          used.push(id);
          const add = items(1 + rand(3));
          op = (s) => s.applyHistoryTransaction({ operationId: id, transaction: { type: "append_items", items: add } });
          break;
        }
        case 6: {
          // a repeat of an operation: the same transaction or another
          const id = used[rand(used.length)] ?? "op-none";
          const add = items(1);
          op = (s) => s.applyHistoryTransaction({ operationId: id, transaction: { type: "append_items", items: add } });
          break;
        }
        case 7:
        case 8: {
          const k = Math.min(rand(4), history.length);
          const expected = rand(5) === 0 ? [user("stale")] : history.slice(history.length - k);
          const id = `op-${round}-${step}`;
          const replacement = items(rand(4));
          op = (s) => s.applyHistoryTransaction({ operationId: id, transaction: { type: "replace_suffix", expectedSuffix: expected, replacement } });
          break;
        }
        case 9: {
          const callId = `c${rand(5)}`;
          const replacement = fcall(callId, `{"replaced":${step}}`);
          op = (s) => s.applyHistoryMutations({ mutations: [{ type: "replace_function_call", callId, replacement }] });
          break;
        }
        case 10: {
          const next = [{ type: "compaction", encrypted_content: `c${step}` }, ...history.slice(-rand(3))];
          // MemorySession has no replaceHistoryWithCompaction: the reference
          // replaces its whole history in one transaction, which keeps the
          // operation ids applied before (the runner's fallback, clear then
          // add, would forget them; the sidecar keeps them)
          const id = `op-${round}-${step}`;
          op = (s) =>
            s instanceof MemorySession
              ? s.applyHistoryTransaction({ operationId: id, transaction: { type: "replace_suffix", expectedSuffix: history, replacement: next } })
              : s.replaceHistoryWithCompaction(next);
          break;
        }
        default: {
          // the framework sizes, now and then: a 122-item turn, a 300 KiB
          // output, five 250 KiB outputs, all in one transaction
          const which = rand(6);
          const add = which === 0 ? items(122) : which === 1 ? big(1, 300 * KiB) : which === 2 ? big(5, 250 * KiB) : items(2);
          const id = `op-${round}-${step}`;
          op = (s) => s.applyHistoryTransaction({ operationId: id, transaction: { type: "append_items", items: add } });
        }
      }
      ops.push(String(op));
      const want = await outcome(op(ref));
      const got = await outcome(op(ours));
      tally[want.failed ?? "ok"] = (tally[want.failed ?? "ok"] ?? 0) + 1;
      assert.deepEqual(got, want, `round ${round} step ${step}: ${op}`);
      assert.deepEqual(await ours.getItems(), await ref.getItems(), `round ${round} step ${step}: history after ${op}`);
    }
  }
  // the refusals were met, not only the happy paths
  assert.ok(tally["already applied"] > 0 && tally["no longer matches"] > 0 && tally.ok > 100, JSON.stringify(tally));
});
