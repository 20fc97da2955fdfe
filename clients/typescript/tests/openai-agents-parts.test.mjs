// Turns too big for one request: SidecarSession.addItems sends them as one
// append_items operation in parts, staged by the sidecar until the last
// part and then visible at once; getItems answers every item byte for byte.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Sidecar, SidecarError } from "../dist/index.js";
import { SidecarSession } from "../dist/openai-agents.js";
import { URL_, hasRoute, skip, unique } from "./support.mjs";

const TX = "/v1/users/{user_id}/sessions/{session_id}/messages/transactions";
const absent = skip || (!(await hasRoute("POST", TX)) && `the sidecar serves no ${TX} yet`);

const KiB = 1024;

/** Item i of a tool loop, as the SDK holds it: a question, a call, its result, an answer. */
function item(i, output = `result ${i}`) {
  switch (i % 4) {
    case 0:
      return { role: "user", content: `question ${i} ☂` };
    case 1:
      return { type: "function_call", callId: `c${i}`, name: "read_file", arguments: JSON.stringify({ n: i }), status: "completed" };
    case 2:
      return { type: "function_call_result", callId: `c${i - 1}`, name: "read_file", status: "completed", output };
    default:
      return { type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: `answer ${i}` }] };
  }
}

/**
 * A Sidecar whose fetch records each transaction part sent ({part, more,
 * count, status}) and runs before(part, attempt) before sending it.
 */
function watched(before = async () => {}) {
  const parts = [];
  const seen = new Map();
  const sc = new Sidecar(URL_, {
    fetch: async (req) => {
      if (req.method !== "POST" || !new URL(req.url).pathname.endsWith("/messages/transactions")) return fetch(req);
      const body = await req.clone().json();
      const attempt = (seen.get(body.part) ?? 0) + 1;
      seen.set(body.part, attempt);
      await before(body, attempt);
      const res = await fetch(req);
      parts.push({ part: body.part, more: body.more, count: body.messages.length, status: res.status });
      return res;
    },
  });
  return { sc, parts };
}

/** Asserts got equals want item by item, as JSON (the bytes stored). */
function sameJSON(got, want) {
  assert.equal(got.length, want.length);
  for (let i = 0; i < want.length; i++) assert.equal(JSON.stringify(got[i]), JSON.stringify(want[i]), `item ${i}`);
}

test("addItems of 5 000 small items: parts, visible at once", { skip: absent }, async () => {
  const items = Array.from({ length: 5000 }, (_, i) => item(i));
  const reader = new Sidecar(URL_);
  const user = unique("ts-parts");
  let visibleBeforeLast;
  const { sc, parts } = watched(async (body) => {
    if (body.more === false) visibleBeforeLast = (await reader.listMessages(user, "chat", { limit: 1, compacted: false })).messages.length;
  });
  const s = new SidecarSession(sc, user, "chat");
  await s.addItems(items);
  assert.equal(parts.length, 50, "5 000 items in parts of 100");
  parts.forEach((p, i) => {
    assert.equal(p.part, i);
    assert.equal(p.more, i < 49);
    assert.equal(p.count, 100);
    assert.equal(p.status, i < 49 ? 202 : 201);
  });
  assert.equal(visibleBeforeLast, 0, "staged parts are not visible before the last one");
  const got = await new SidecarSession(new Sidecar(URL_), user, "chat").getItems();
  sameJSON(got, items);
  assert.deepEqual(got, items);
  sameJSON(await s.getItems(1234), items.slice(-1234));
});

test("addItems of 30 MiB: 60 tool results of 512 KiB", { skip: absent }, async () => {
  const big = (i) => `${i}:`.padEnd(512 * KiB, "abcdefghij<&>\"\\\n");
  const items = Array.from({ length: 60 }, (_, i) =>
    ({ type: "function_call_result", callId: `big${i}`, name: "read_file", status: "completed", output: big(i) }),
  );
  const { sc, parts } = watched();
  const user = unique("ts-parts");
  // an earlier turn stays before it
  const s = new SidecarSession(sc, user, "chat");
  await s.addItems([item(0)]);
  assert.equal(parts.length, 0, "a small turn is one append, as before");
  await s.addItems(items);
  assert.equal(parts.length, 60, "each item past a part's budget goes alone");
  assert.ok(parts.every((p, i) => p.part === i && p.count === 1));
  const got = await new SidecarSession(new Sidecar(URL_), user, "chat").getItems();
  sameJSON(got, [item(0), ...items]);
});

test("a turn whose staged parts were lost is sent again from part 0", { skip: absent }, async () => {
  const items = Array.from({ length: 1050 }, (_, i) => item(i));
  const user = unique("ts-parts");
  const admin = new Sidecar(URL_);
  // the session is deleted after part 0 was staged: the sidecar drops the
  // stage, so part 1 is refused (409 part_missing) and the adapter starts over
  const { sc, parts } = watched(async (body, attempt) => {
    if (body.part === 1 && attempt === 1) await admin.deleteSession(user, "chat");
  });
  await new SidecarSession(sc, user, "chat").addItems(items);
  const again = Array.from({ length: 11 }, (_, i) => [i, i < 10 ? 202 : 201]);
  assert.deepEqual(
    parts.map((p) => [p.part, p.status]),
    [[0, 202], [1, 409], ...again],
  );
  sameJSON(await new SidecarSession(admin, user, "chat").getItems(), items);
});

test("a turn past SESSION_MAX_MESSAGES is refused whole, naming it", { skip: absent }, async () => {
  const user = unique("ts-parts");
  const s = new SidecarSession(new Sidecar(URL_), user, "chat");
  await s.addItems([item(0)]);
  const items = Array.from({ length: 10000 }, (_, i) => item(i + 1));
  await assert.rejects(s.addItems(items), (e) => {
    assert.ok(e instanceof SidecarError, String(e));
    assert.equal(e.status, 409);
    assert.equal(e.code, "session_full");
    assert.match(e.message, /SESSION_MAX_MESSAGES/);
    return true;
  });
  sameJSON(await s.getItems(), [item(0)]);
});
