// The event stream: parsing and reconnecting with Last-Event-ID against a
// stand-in stream, then the live stream once the sidecar serves it.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { test } from "node:test";

import { Sidecar } from "../dist/index.js";
import { URL_, hasRoute, operations, recorder, skip, templateRegex, unique } from "./support.mjs";

const EVENTS = "/v1/users/{user_id}/sessions/{session_id}/events";

test("reconnects with Last-Event-ID, sends the token, ends after deleted", async () => {
  const seen = [];
  const srv = createServer((req, res) => {
    seen.push([req.url, req.headers["last-event-id"], req.headers.authorization]);
    const body =
      seen.length === 1
        ? 'retry: 10\n\n: keepalive\n\nid: 1\nevent: entry_appended\ndata: {"qa_id":"q1"}\n\nid: 2\nevent: x-delta\ndata: line one\ndata: line two\n\n'
        : 'id: 2\nevent: reconnected\ndata: {"gap":false,"oldest_id":"1"}\n\nid: 3\nevent: entry_appended\ndata: {"qa_id":"q2"}\n\nid: 4\nevent: deleted\ndata: {}\n\n';
    res.writeHead(200, { "Content-Type": "text/event-stream", Connection: "close" });
    res.end(body); // then the connection ends: a drop
  });
  await new Promise((resolve) => srv.listen(0, "127.0.0.1", resolve));
  try {
    const sc = new Sidecar(`http://127.0.0.1:${srv.address().port}`, { token: "t0k" });
    const got = [];
    for await (const e of sc.events("alice", "chat-1")) got.push([e.id, e.event, e.data]);
    assert.deepEqual(got, [
      ["1", "entry_appended", { qa_id: "q1" }],
      ["2", "x-delta", "line one\nline two"],
      ["2", "reconnected", { gap: false, oldest_id: "1" }],
      ["3", "entry_appended", { qa_id: "q2" }],
      ["4", "deleted", {}],
    ]);
    assert.deepEqual(seen, [
      ["/v1/users/alice/sessions/chat-1/events", undefined, "Bearer t0k"],
      ["/v1/users/alice/sessions/chat-1/events", "2", "Bearer t0k"],
    ]);
  } finally {
    srv.close();
  }
});

test("live stream, resume, abort, user events", { skip: skip || (!(await hasRoute("GET", EVENTS)) && `the sidecar serves no ${EVENTS} yet`) }, async () => {
  const rec = recorder();
  const sc = new Sidecar(URL_, { fetch: rec.fetch });
  const u = unique("ts-events");
  await sc.appendEntry(u, "s1", { qa_id: "q1", question: "q", answer: "a" });
  let first;
  for await (const e of sc.getSessionEvents(u, "s1", { lastEventId: "0" })) {
    if (e.event === "reconnected") continue;
    first = e;
    break; // ends the generator: the connection is closed
  }
  assert.deepEqual([first.event, first.data.qa_id], ["entry_appended", "q1"]);

  // Resume after first: the events written meanwhile, once, in order.
  await sc.appendEntry(u, "s1", { qa_id: "q2", question: "q", answer: "a" });
  const pub = await sc.publishSessionEvent(u, "s1", "x-delta", { text: "Hel" });
  await sc.requestAbort(u, "s1");
  await sc.clearAbort(u, "s1");
  const got = [];
  const it = sc.events(u, "s1", { lastEventId: first.id });
  for await (const e of it) {
    got.push(e);
    if (got.length === 5) break;
  }
  assert.deepEqual(got.map((e) => e.event), ["reconnected", "entry_appended", "x-delta", "abort", "abort_cleared"]);
  assert.equal(got[0].data.gap, false);
  assert.deepEqual([got[1].data.qa_id, got[2].data, got[2].id], ["q2", { text: "Hel" }, pub.id]);

  // Deleting the session ends the stream.
  const rest = [];
  const tail = (async () => {
    for await (const e of sc.events(u, "s1", { lastEventId: got[4].id })) rest.push(e.event);
  })();
  await sc.deleteSession(u, "s1");
  await tail;
  assert.equal(rest.at(-1), "deleted");

  // The user's stream: a user-level write.
  const ac = new AbortController();
  const user = sc.getUserEvents(u, { lastEventId: "0", signal: ac.signal });
  await sc.patchUserState(u, { lang: "fr" });
  for await (const e of user) {
    if (e.event === "reconnected") continue;
    assert.match(e.event, /state_changed/);
    break;
  }
  // The streams' GETs were read above; the other calls of the family went through the recorder.
  for (const [id, m, p] of await operations()) {
    if (m === "GET" || p.startsWith("/v1/adk/") || !(p.endsWith("/events") || p.endsWith("/abort"))) continue; // adk.test.mjs: ADK's events
    const rx = templateRegex(p);
    assert.ok(rec.sent.some(([sm, sp]) => sm === m && rx.test(sp)), `${id} (${m} ${p}) was not called`);
  }
});
