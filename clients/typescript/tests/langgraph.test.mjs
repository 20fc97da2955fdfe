// SidecarCheckpointSaver (@agentsidecar/client/langgraph) on the sidecar
// under test: LangGraph's own validation suite, and a real StateGraph
// resumed by another process and rewound to an earlier checkpoint.
import { execFile } from "node:child_process";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";

import { Command } from "@langchain/langgraph";
import { SidecarCheckpointSaver, sessionIdOf, threadIdOf } from "../dist/langgraph.js";
import { graph } from "./langgraph_graph.mjs";
import { TOKEN, TOKEN_URL, URL_, skip, unique } from "./support.mjs";

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..");

test("@langchain/langgraph-checkpoint-validation passes whole", { skip, timeout: 600_000 }, async () => {
  // Vitest, the package's runner, with its JSON report; every test passes
  // and none is skipped.
  const { stdout } = await run(
    process.execPath,
    ["node_modules/vitest/vitest.mjs", "run", "--globals", "--reporter=json", "tests/langgraph.validation.spec.mjs"],
    { cwd: root, env: { ...process.env, NO_COLOR: "1" }, maxBuffer: 64 << 20 },
  ).catch((e) => {
    throw new Error(`validation failed:\n${e.stdout?.slice(-20000)}\n${e.stderr?.slice(-5000)}`);
  });
  const report = JSON.parse(stdout.slice(stdout.indexOf("{")));
  const failed = report.testResults.flatMap((f) => f.assertionResults.filter((a) => a.status !== "passed").map((a) => `${a.status}: ${a.fullName}`));
  assert.deepEqual(failed, []);
  assert.equal(report.numFailedTests, 0);
  assert.ok(report.numPassedTests >= 700, `only ${report.numPassedTests} tests ran`);
  for (const name of ["#getTuple", "#list", "#put", "#putWrites", "#deleteThread", "#getDeltaChannelHistory"]) {
    assert.ok(report.testResults[0].assertionResults.some((a) => a.fullName.includes(name) && a.status === "passed"), `no ${name} test passed`);
  }
});

test("a graph interrupted in one process resumes in another (another sidecar), then rewinds", { skip, timeout: 120_000 }, async () => {
  const user = unique("lgg");
  const thread = `thread ${unique("t")}/ü`; // not a session id: encoded
  const config = { configurable: { thread_id: thread } };
  const { app, saver } = graph(URL_, user);
  const first = await app.invoke({ log: ["start"] }, config);
  assert.deepEqual(first.log, ["start", "plan"]);
  assert.deepEqual((await app.getState(config)).next, ["ask"]);

  // another process, another saver, another sidecar on the same Redis
  // (the harness's second one, with a token): the answer resumes the
  // interrupt
  const other = TOKEN_URL || URL_;
  const { stdout } = await run(process.execPath, [join(here, "langgraph_worker.mjs"), other, user, thread, "yes"], {
    cwd: root,
    env: { ...process.env, SIDECAR_TOKEN: TOKEN_URL ? TOKEN : "" },
  });
  assert.deepEqual(JSON.parse(stdout).log, ["start", "plan", "approved:yes", "act"]);
  assert.deepEqual((await app.getState(config)).values.log, ["start", "plan", "approved:yes", "act"]);

  // rewind to the checkpoint before plan: plan runs again, the graph
  // waits at ask again, and another answer forks the thread
  const history = [];
  for await (const s of app.getStateHistory(config)) history.push(s);
  const beforePlan = history.find((s) => s.next.length === 1 && s.next[0] === "plan");
  assert.ok(beforePlan, "no checkpoint before plan");
  assert.deepEqual((await app.invoke(null, beforePlan.config)).log, ["start", "plan"]);
  assert.deepEqual((await app.getState(config)).next, ["ask"]);
  const fork = await app.invoke(new Command({ resume: "no" }), config);
  assert.deepEqual(fork.log, ["start", "plan", "approved:no", "act"]);
  // ... the first run's checkpoints are still there: replay before act
  const beforeAct = history.find((s) => s.next.length === 1 && s.next[0] === "act");
  assert.deepEqual((await app.invoke(null, beforeAct.config)).log, ["start", "plan", "approved:yes", "act"]);
  const all = [];
  for await (const s of app.getStateHistory(config)) all.push(s);
  assert.ok(all.length > history.length, `history ${history.length} → ${all.length}`);

  // the thread is a session of the user: listed, and gone with deleteThread
  const sessions = await saver.sidecar.listUserSessions(user);
  assert.deepEqual(sessions.sessions.map((s) => threadIdOf(s.session_id)), [thread]);
  await saver.deleteThread(thread);
  assert.equal(await saver.getTuple(config), undefined);
  await saver.deleteThread(thread); // a thread already gone is no error
});

test("thread ids map to session ids both ways", () => {
  for (const t of ["t1", "a.b@c-d_e", "with space", "b64.x", "..", "ü", "x".repeat(128), "🙂/\u0000"]) {
    const s = sessionIdOf(t);
    assert.match(s, /^[A-Za-z0-9_.@-]{1,128}$/);
    assert.equal(threadIdOf(s), t);
  }
  assert.equal(sessionIdOf("t1"), "t1");
  assert.throws(() => sessionIdOf("x".repeat(100) + " "), TypeError);
  assert.throws(() => new SidecarCheckpointSaver({ baseUrl: "http://127.0.0.1:1", userId: "a b" }), TypeError);
});

test("metadata comes back through the serde, as LangGraph's savers give it", { skip }, async () => {
  // MemorySaver and the Postgres saver write metadata with serde.dumpsTyped
  // and read it with serde.loadsTyped("json", ...): a message in it comes
  // back a message, not its JSON, and MemorySaver answers the same.
  const { HumanMessage } = await import("@langchain/core/messages");
  const { MemorySaver, emptyCheckpoint } = await import("@langchain/langgraph-checkpoint");
  const metadata = { source: "loop", step: 1, parents: {}, writes: { node: { messages: [new HumanMessage("hi")] } } };
  const config = { configurable: { thread_id: unique("meta"), checkpoint_ns: "" } };
  const checkpoint = emptyCheckpoint();
  const got = [];
  for (const saver of [new SidecarCheckpointSaver({ baseUrl: URL_ }), new MemorySaver()]) {
    const saved = await saver.put(config, checkpoint, metadata, {});
    const tuple = await saver.getTuple(saved);
    const listed = [];
    for await (const t of saver.list(config, { filter: { source: "loop" } })) listed.push(t);
    assert.equal(listed.length, 1, saver.constructor.name);
    const message = tuple.metadata.writes.node.messages[0];
    assert.ok(message instanceof HumanMessage, `${saver.constructor.name}: ${JSON.stringify(message)}`);
    assert.equal(message.content, "hi");
    assert.ok(listed[0].metadata.writes.node.messages[0] instanceof HumanMessage, saver.constructor.name);
    got.push(tuple.metadata);
  }
  assert.deepEqual(got[0], got[1]);
});
