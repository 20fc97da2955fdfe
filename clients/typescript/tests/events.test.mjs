// The event stream: parsing and reconnecting with Last-Event-ID against a
// stand-in stream, then the live stream once the sidecar serves it.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { test } from "node:test";

import { Sidecar } from "../dist/index.js";
import { URL_, hasRoute, skip, unique } from "./support.mjs";

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

test("live stream and resume", { skip: skip || (!(await hasRoute("GET", EVENTS)) && `the sidecar serves no ${EVENTS} yet`) }, async () => {
  const sc = new Sidecar(URL_);
  const u = unique("ts-events");
  await sc.appendEntry(u, "s1", { qa_id: "q1", question: "q", answer: "a" });
  const ac = new AbortController();
  let first;
  for await (const e of sc.events(u, "s1", { lastEventId: "0", signal: ac.signal })) {
    if (e.event === "reconnected") continue;
    first = e;
    break;
  }
  assert.deepEqual([first.event, first.data.qa_id], ["entry_appended", "q1"]);
  await sc.appendEntry(u, "s1", { qa_id: "q2", question: "q", answer: "a" });
  await sc.appendEntry(u, "s1", { qa_id: "q3", question: "q", answer: "a" });
  const got = [];
  const it = sc.events(u, "s1", { lastEventId: first.id });
  for await (const e of it) {
    got.push(e);
    if (got.length === 3) break;
  }
  assert.equal(got[0].event, "reconnected");
  assert.equal(got[0].data.gap, false);
  assert.deepEqual(got.slice(1).map((e) => [e.event, e.data.qa_id]), [["entry_appended", "q2"], ["entry_appended", "q3"]]);
});
