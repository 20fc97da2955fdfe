// The messages and blocks calls, live, once the sidecar serves them: each
// operation of those families called and checked.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Sidecar, SidecarError } from "../dist/index.js";
import { URL_, hasRoute, operations, recorder, skip, templateRegex, unique } from "./support.mjs";

const MESSAGES = "/v1/users/{user_id}/sessions/{session_id}/messages";
const BLOCKS = "/v1/users/{user_id}/blocks";

async function familyCalled(sent, marks) {
  for (const [id, m, p] of await operations()) {
    if (!marks.some((k) => p.includes(k))) continue;
    const rx = templateRegex(p);
    assert.ok(sent.some(([sm, sp]) => sm === m && rx.test(sp)), `${id} (${m} ${p}) was not called`);
  }
}

async function rejects(p, status, code) {
  await assert.rejects(p, (e) => e instanceof SidecarError && e.status === status && e.code === code);
}

const noMessages = skip || (!(await hasRoute("POST", MESSAGES)) && `the sidecar serves no ${MESSAGES} yet`);
const noBlocks = skip || (!(await hasRoute("PUT", BLOCKS + "/{label}")) && `the sidecar serves no ${BLOCKS} yet`);

test("every messages operation", { skip: noMessages }, async () => {
  const rec = recorder();
  const sc = new Sidecar(URL_, { fetch: rec.fetch });
  const u = unique("ts-msgs");
  const s = "s1";
  const first = await sc.appendMessage(u, s, { id: "m1", role: "user", content: "Where is the dog?" });
  assert.deepEqual([first.created, first.id, first.role], [true, "m1", "user"]);
  assert.equal((await sc.appendMessage(u, s, { id: "m1", role: "user", content: "Where is the dog?" })).created, false);
  const batch = await sc.appendMessages(u, s, [{ role: "assistant", content: "In the garden" }, { role: "user", content: "And the cat?" }], { ifLeaf: "m1" });
  assert.deepEqual(batch.map((m) => m.role), ["assistant", "user"]);
  const page = await sc.listMessages(u, s);
  assert.deepEqual(page.messages.map((m) => m.id), ["m1", batch[0].id, batch[1].id]);
  assert.equal(page.total, 3);
  assert.deepEqual((await sc.listMessages(u, s, { order: "desc", limit: 1 })).messages.map((m) => m.id), [batch[1].id]);
  assert.equal((await sc.getMessage(u, s, "m1")).content, "Where is the dog?");
  const comp = await sc.createCompaction(u, s, { summary: "Asked where the dog is.", from_id: "m1", to_id: batch[0].id });
  assert.deepEqual((await sc.listCompactions(u, s)).compactions.map((c) => c.id), [comp.id]);
  assert.deepEqual((await sc.listMessages(u, s)).messages.map((m) => m.id), [`compaction:${comp.id}`, batch[1].id]);
  assert.equal((await sc.listMessages(u, s, { compacted: false })).messages.length, 3);
  const fork = await sc.forkSession(u, s, { at: batch[0].id, session_id: "s1-fork" }, { idempotencyKey: "f1" });
  assert.deepEqual([fork.created, fork.session_id, fork.parent_session_id], [true, "s1-fork", s]);
  assert.equal((await sc.forkSession(u, s, { at: batch[0].id, session_id: "s1-fork" }, { idempotencyKey: "f1" })).created, false);
  const cont = await sc.splitSession(u, "s1-fork", { summary: "Dog in the garden.", session_id: "s1-cont" });
  assert.deepEqual([cont.session_id, cont.parent_session_id], ["s1-cont", "s1-fork"]);
  assert.equal((await sc.getSession(u, "s1-fork")).end_reason, "split");
  assert.deepEqual((await sc.listMessages(u, "s1-cont")).messages.map((m) => m.role), ["system"]);
  const branch = await sc.putMessage(u, s, "m2b", { role: "assistant", content: "Under the tree", parent_id: "m1" });
  assert.equal(branch.created, true);
  assert.deepEqual((await sc.listChildren(u, s, "m1")).messages.map((m) => m.id), [batch[0].id, "m2b"]);
  assert.equal((await sc.patchMessage(u, s, "m2b", { content: "On the roof" })).content, "On the roof");
  await rejects(sc.deleteMessage(u, s, "m1"), 409, "has_children");
  const hits = (await sc.searchUser(u, "gardens")).results;
  assert.ok(hits.map((h) => h.session_id).includes("s1-cont"), "stemmed: gardens finds the summary's garden");
  assert.ok(hits.every((h) => h.kind === "message" && h.snippet));
  assert.ok((await sc.searchRelevant(u, "s1-cont", "garden", 5)).results.length > 0);
  assert.equal((await sc.popMessage(u, s)).id, "m2b");
  await sc.deleteMessage(u, s, "m1", { subtree: true });
  await rejects(sc.getMessage(u, s, "m1"), 404, "not_found");
  await sc.appendMessage(u, s, { role: "user", content: "again" });
  const tx = { operation_id: "op-1", type: "append_items", messages: [{ role: "user", content: "tx" }] };
  const applied = await sc.applyMessageTransaction(u, s, tx);
  assert.deepEqual([applied.applied, applied.messages.map((m) => m.content)], [true, ["tx"]]);
  assert.equal((await sc.applyMessageTransaction(u, s, tx)).applied, false, "a repeat of the operation id");
  await rejects(sc.applyMessageTransaction(u, s, { ...tx, messages: [{ role: "user", content: "other" }] }), 409, "operation_conflict");
  await sc.clearMessages(u, s);
  assert.deepEqual((await sc.listMessages(u, s)).messages, []);
  await rejects(sc.popMessage(u, s), 404, "not_found");
  await familyCalled(rec.sent, ["/messages", "/compactions", "/fork", "/split"]);
});

test("every blocks operation", { skip: noBlocks }, async () => {
  const rec = recorder();
  const sc = new Sidecar(URL_, { fetch: rec.fetch });
  const u = unique("ts-blocks");
  const s = "s1";
  const b = await sc.putUserBlock(u, "persona", { content: "You are terse." });
  assert.deepEqual([b.created, b.label, b.content], [true, "persona", "You are terse."]);
  assert.equal((await sc.putUserBlock(u, "persona", { content: "You are terse." })).created, false);
  assert.equal((await sc.appendUserBlock(u, "persona", " And kind.")).content, "You are terse. And kind.");
  assert.equal((await sc.getUserBlock(u, "persona")).content, "You are terse. And kind.");
  assert.deepEqual((await sc.listUserBlocks(u)).blocks.map((x) => x.label), ["persona"]);
  assert.equal((await sc.putSessionBlock(u, s, "notes", { content: "", max_tokens: 100 })).created, true);
  assert.equal((await sc.appendSessionBlock(u, s, "notes", "dog: garden")).content, "dog: garden");
  assert.equal((await sc.getSessionBlock(u, s, "notes")).content, "dog: garden");
  assert.deepEqual((await sc.listSessionBlocks(u, s)).blocks.map((x) => x.label).sort(), ["notes", "persona"]);
  const prompt = await sc.getSystemPrompt(u, s);
  assert.ok(prompt.prompt.includes("PERSONA") && prompt.prompt.includes("dog: garden"), prompt.prompt);
  assert.ok("prompt" in (await sc.refreshSystemPrompt(u, s)));
  assert.ok((await sc.listTools(u, s)).tools.length > 0);
  const r = await sc.callTool(u, s, "set_context", { label: "notes", content: "cat: roof", action: "append" }, "call-1");
  assert.equal(r.is_error, false, JSON.stringify(r));
  assert.ok((await sc.getSessionBlock(u, s, "notes")).content.includes("cat: roof"));
  await sc.deleteSessionBlock(u, s, "notes");
  await sc.deleteUserBlock(u, "persona");
  await rejects(sc.getUserBlock(u, "persona"), 404, "not_found");
  await familyCalled(rec.sent, ["/blocks", "/system-prompt", "/tools"]);
});
