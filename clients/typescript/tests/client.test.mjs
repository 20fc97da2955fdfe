// Every operation of the served document, called live and checked.
import assert from "node:assert/strict";
import { test } from "node:test";

import { BadID, LockHeld, LockLost, Sidecar, SidecarError } from "../dist/index.js";
import { TOKEN, TOKEN_URL, URL_, operations, recorder, skip, templateRegex, unique } from "./support.mjs";

async function rejects(p, status, code, Cls = SidecarError) {
  await assert.rejects(p, (e) => {
    assert.ok(e instanceof Cls, `got ${e}, want ${Cls.name}`);
    assert.equal(e.status, status);
    assert.equal(e.code, code);
    assert.ok(e.message);
    return true;
  });
}

test("a base URL without its scheme is refused at construction", () => {
  for (const bad of ["localhost:7480", "127.0.0.1:7480", "ftp://127.0.0.1:7480", "http://", "not a url"]) {
    assert.throws(() => new Sidecar(bad), (e) => e instanceof TypeError && e.message.includes("want http://host:port"), bad);
  }
  for (const ok of ["http://127.0.0.1:7480", "https://sidecar.local/", "http://[::1]:7480"]) {
    assert.equal(new Sidecar(ok).baseUrl, ok.replace(/\/+$/, ""));
  }
});

test("every operation has a method", { skip }, async () => {
  for (const [id, m, p] of await operations()) {
    assert.equal(typeof Sidecar.prototype[id], "function", `Sidecar has no ${id} (${m} ${p})`);
  }
});

test("every operation", { skip }, async () => {
  const rec = recorder();
  const sc = new Sidecar(URL_, { fetch: rec.fetch });
  const u = unique("ts-every");
  const s = "s1";

  // Entries.
  let e = await sc.appendEntry(u, s, { qa_id: "q1", question: "Where is the dog?", answer: "In the garden", memify_metadata: { a: true } });
  assert.equal(e.created, true);
  assert.deepEqual([e.qa_id, e.context, e.feedback_score, e.memify_metadata], ["q1", "", null, { a: true }]);
  assert.equal(JSON.stringify(e).includes("created"), false, "created is not part of the entry's JSON");
  const again = await sc.appendEntry(u, s, { qa_id: "q1", question: "other", answer: "other" });
  assert.equal(again.created, false);
  assert.equal(again.question, "Where is the dog?");
  const gen = await sc.appendEntry(u, s, { question: "And the cat?", answer: "On the roof" });
  assert.equal(gen.created, true);
  assert.equal(gen.qa_id.length, 36);
  assert.deepEqual((await sc.listEntries(u, s)).map((x) => x.qa_id), ["q1", gen.qa_id]);
  assert.deepEqual((await sc.listEntries(u, s, 1)).map((x) => x.qa_id), [gen.qa_id]);
  assert.deepEqual(await sc.listEntries(u, "unknown"), []);
  assert.equal((await sc.getEntry(u, s, "q1")).answer, "In the garden");
  e = await sc.updateEntry(u, s, "q1", { answer: "Under the tree", used_graph_element_ids: { node_ids: ["n1"] }, memify_metadata: { b: true } });
  assert.deepEqual([e.answer, e.used_graph_element_ids, e.memify_metadata], ["Under the tree", { node_ids: ["n1"] }, { a: true, b: true }]);
  e = await sc.updateEntry(u, s, "q1", { used_graph_element_ids: null });
  assert.equal(e.used_graph_element_ids, null);
  e = await sc.setFeedback(u, s, "q1", { feedback_score: 4 });
  assert.deepEqual([e.feedback_score, e.feedback_text], [4, null]);
  e = await sc.clearFeedback(u, s, "q1");
  assert.deepEqual([e.feedback_score, e.feedback_text], [null, null]);
  assert.deepEqual((await sc.searchEntries(u, s, "TREE dog")).map((x) => x.qa_id), ["q1"]);
  assert.deepEqual((await sc.searchEntries(u, s, "the", 1)).map((x) => x.qa_id), [gen.qa_id]);

  // Traces and context.
  const tr = await sc.appendTrace(u, s, { origin_function: "search_graph", status: " ok ", method_params: { top_k: 5 } });
  assert.deepEqual([tr.status, tr.method_params], ["ok", { top_k: 5 }]);
  assert.deepEqual((await sc.listTraces(u, s, 1)).map((x) => x.trace_id), [tr.trace_id]);
  let c = await sc.appendContext(u, s, { id: "pref-1", text: "metric units" });
  assert.equal(c.created, true);
  c = await sc.appendContext(u, s, { id: "pref-1", text: "other" });
  assert.deepEqual([c.created, c.text], [false, "metric units"]);
  c = await sc.appendContext(u, s, { n: 1 });
  assert.equal(c.id.length, 36);
  assert.deepEqual((await sc.listContext(u, s)).map((x) => x.id), ["pref-1", c.id]);
  assert.deepEqual(await sc.updateContext(u, s, "pref-1", { text: "imperial" }), { id: "pref-1", text: "imperial" });
  await sc.deleteContext(u, s, "pref-1");
  await rejects(sc.deleteContext(u, s, "pref-1"), 404, "not_found");

  // TTL.
  assert.ok((await sc.getSessionTTL(u, s)).ttl_seconds > 0);
  assert.deepEqual(await sc.setSessionTTL(u, s, 3600), { ttl_seconds: 3600 });
  assert.deepEqual(await sc.setSessionTTL(u, s, 0), { ttl_seconds: -1 });

  // Usage and lifecycle.
  let r = await sc.recordUsage(u, s, { model: "ts-every-model", tokens_in: 10, output_text: "12345678", cost_usd: 0.25 }, { idempotencyKey: "k1" });
  assert.deepEqual([r.created, r.cost_source, r.cost_usd, r.tokens_in, r.tokens_out], [true, "explicit", 0.25, 10, 2]);
  assert.equal(rec.sent.at(-1)[2].get("Idempotency-Key"), "k1");
  r = await sc.recordUsage(u, s, { model: "ts-every-model" }, { idempotencyKey: "k1" });
  assert.deepEqual([r.created, r.cost_usd], [false, 0.25]);
  r = await sc.recordUsage(u, s, { model: "ts-every-model", error: true });
  assert.equal(r.created, true);
  assert.match(rec.sent.at(-1)[2].get("Idempotency-Key"), /^[0-9a-f-]{36}$/);
  const got = await sc.getSession(u, s);
  assert.deepEqual([got.status, got.entry_count, got.calls, got.error_count, got.ttl_seconds], ["running", 2, 2, 1, -1]);
  const page = await sc.listUserSessions(u);
  assert.deepEqual(page.sessions.map((x) => x.session_id), [s]);
  assert.deepEqual((await sc.listUserSessions(u, { status: "completed" })).sessions, []);
  assert.ok((await sc.listSessions({ limit: 500 })).sessions.some((x) => x.user_id === u));
  let found = false;
  for await (const x of sc.allSessions({ limit: 1 })) found ||= x.user_id === u;
  assert.ok(found, "allSessions did not list the session");
  assert.ok((await sc.getSessionStats()).calls >= 2);
  assert.ok((await sc.getCostByModel()).models.some((m) => m.model === "ts-every-model"));
  assert.ok((await sc.getCostByModel(1)).models.some((m) => m.model === "ts-every-model"));
  assert.equal((await sc.failSession(u, s)).status, "failed");
  await rejects(sc.completeSession(u, s), 409, "session_ended");

  // Registry.
  const cs = await sc.createSession(u, { title: "t", metadata: { repo: "r" } }, { idempotencyKey: "c1" });
  assert.deepEqual([cs.created, cs.session_id.length, cs.title], [true, 36, "t"]);
  const cs2 = await sc.createSession(u, {}, { idempotencyKey: "c1" });
  assert.deepEqual([cs2.created, cs2.session_id], [false, cs.session_id]);
  await rejects(sc.createSession(u, { session_id: cs.session_id }), 409, "session_exists");
  const up = await sc.updateSession(u, cs.session_id, { title: null, metadata: { repo: null, pr: "42" } });
  assert.deepEqual([up.title, up.metadata], [null, { pr: "42" }]);
  const mine = [];
  for await (const x of sc.allUserSessions(u, { metadata: { pr: "42" } })) mine.push(x.session_id);
  assert.deepEqual(mine, [cs.session_id]);
  const done = await sc.completeSession(u, cs.session_id, "done");
  assert.deepEqual([done.summary, done.end_reason], ["done", "completed"]);
  await sc.deleteSession(u, cs.session_id);
  const st = await sc.startSession(u, { match: { agent: "a" } });
  assert.deepEqual([st.created, st.is_new], [true, true]);
  const st2 = await sc.startSession(u, { match: { agent: "a" } });
  assert.deepEqual([st2.created, st2.is_new, st2.session_id], [false, false, st.session_id]);
  const ended = await sc.endActiveSession(u, { summary: "s", match: { agent: "a" } });
  assert.equal(ended.session_id, st.session_id);
  await rejects(sc.endActiveSession(u, { match: { agent: "a" } }), 404, "not_found");
  assert.deepEqual(await sc.patchSessionState(u, st.session_id, { a: 1, b: null }), { a: 1 });
  assert.deepEqual(await sc.getSessionState(u, st.session_id), { a: 1 });
  assert.deepEqual(await sc.patchUserState(u, { lang: "fr" }), { lang: "fr" });
  assert.deepEqual(await sc.getUserState(u), { lang: "fr" });
  await sc.deleteSession(u, st.session_id);

  // Deletes.
  await sc.deleteEntry(u, s, "q1");
  await rejects(sc.deleteEntry(u, s, "q1"), 404, "not_found");
  await sc.deleteSession(u, s);
  await rejects(sc.getSession(u, s), 404, "not_found");

  // Erasure: another user, erased whole; its writes refused a while after.
  const eu = u + "-erased";
  await sc.appendEntry(eu, "s1", { question: "q", answer: "a" });
  assert.deepEqual(await sc.eraseUser(eu), { erased: true });
  await rejects(sc.appendEntry(eu, "s1", { question: "q", answer: "a" }), 409, "user_erasing");

  // Locks.
  const name = unique("ts-every-lock");
  const g = await sc.acquireLock(name, { owner: "me", ttl_ms: 5000 });
  assert.deepEqual([g.token.length, g.owner, g.ttl_ms], [32, "me", 5000]);
  const info = await sc.inspectLock(name);
  assert.deepEqual([info.held, info.owner, info.fencing_token], [true, "me", g.fencing_token]);
  assert.equal((await sc.refreshLock(name, g.token, 8000)).ttl_ms, 8000);
  await rejects(sc.acquireLock(name, { wait_ms: 10 }), 409, "lock_held", LockHeld);
  await rejects(sc.releaseLock(name, "0".repeat(32)), 409, "not_owner");
  await sc.releaseLock(name, g.token);
  await rejects(sc.releaseLock(name, g.token), 404, "not_held");
  await rejects(sc.refreshLock(name, g.token), 409, "lock_lost", LockLost);
  assert.deepEqual(await sc.inspectLock(name), { held: false });

  // Every operation of the document was sent (messages and events have their own suites).
  for (const [id, m, p] of await operations()) {
    if (p === "/v1/users/{user_id}/search" || p.startsWith("/v1/adk/") || ["/messages", "/compactions", "/fork", "/split", "/events", "/abort", "/blocks", "/system-prompt", "/tools", "/checkpoints"].some((m) => p.includes(m))) continue; // messages.test.mjs, events.test.mjs, langgraph.test.mjs
    const rx = templateRegex(p);
    assert.ok(rec.sent.some(([sm, sp]) => sm === m && rx.test(sp)), `${id} (${m} ${p}) was not called`);
  }
});

test("errors, token, wire", { skip }, async () => {
  const rec = recorder();
  const sc = new Sidecar(URL_ + "/", { fetch: rec.fetch, userAgent: "my-agent/1.0" });
  await rejects(sc.getEntry("ts-wire", "a b", "q"), 400, "invalid_id");
  assert.equal(rec.sent.at(-1)[1], "/v1/users/ts-wire/sessions/a%20b/entries/q");
  assert.equal(rec.sent.at(-1)[2].get("User-Agent"), "my-agent/1.0");
  assert.equal(rec.sent.at(-1)[2].get("Authorization"), null);
  for (const bad of ["", ".", ".."]) assert.throws(() => sc.getEntry("ts-wire", bad, "q"), BadID);
  assert.equal(rec.sent.length, 1, "bad ids are refused before anything is sent");
  await rejects(sc.listEntries("ts-wire", "s", 5000), 400, "invalid_query");
  await rejects(sc.setFeedback("ts-wire", "s", "q", { feedback_score: 9 }), 400, "invalid_field");
  await rejects(sc.updateEntry("ts-wire", "s", "q", { prompt: "x" }), 400, "unknown_field");

  await rejects(new Sidecar(TOKEN_URL).getSessionStats(), 401, "unauthorized");
  await rejects(new Sidecar(TOKEN_URL, { token: "wrong" }).getSessionStats(), 401, "unauthorized");
  assert.ok("sessions" in (await new Sidecar(TOKEN_URL, { token: TOKEN }).getSessionStats()));
});

test("retries only where safe", { skip }, async () => {
  // A fetch that answers 503 redis_unavailable (Retry-After: 0) to the first
  // two calls, as the sidecar does while Redis is away, then passes through.
  let calls = 0;
  const flaky = (req) => {
    calls++;
    if (calls <= 2) {
      return Promise.resolve(
        new Response('{"error":{"code":"redis_unavailable","message":"Redis is unavailable"}}', {
          status: 503,
          headers: { "Content-Type": "application/json", "Retry-After": "0" },
        }),
      );
    }
    return fetch(req);
  };
  const sc = new Sidecar(URL_, { fetch: flaky });
  const u = unique("ts-retry");
  const e = await sc.appendEntry(u, "s", { question: "q", answer: "a" });
  assert.deepEqual([e.created, calls], [true, 3]);
  calls = 0;
  await rejects(sc.acquireLock(unique("ts-retry-lock")), 503, "redis_unavailable");
  assert.equal(calls, 1, "an acquire is never repeated");
  calls = 0;
  await rejects(new Sidecar(URL_, { fetch: flaky, retries: 1 }).getSession(u, "s"), 503, "redis_unavailable");
  assert.equal(calls, 2);
});
