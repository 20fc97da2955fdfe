// The Vercel AI SDK's save-by-id pattern of docs/clients.md, with the real
// `ai` package: UIMessages whose metadata is any JSON value (a string, a
// number, an object, none) saved by id, saved again unchanged, read back
// through ai's validateUIMessages equal to what was saved.
import assert from "node:assert/strict";
import { test } from "node:test";

import { convertToModelMessages, validateUIMessages } from "ai";
import { z } from "zod";

import { Sidecar } from "../dist/index.js";
import { URL_, hasRoute, skip, unique } from "./support.mjs";

const MESSAGES = "/v1/users/{user_id}/sessions/{session_id}/messages";
const absent = skip || (!(await hasRoute("PUT", MESSAGES + "/{message_id}")) && `the sidecar serves no ${MESSAGES} yet`);

test("UIMessages saved by id, read through validateUIMessages", { skip: absent }, async () => {
  const sc = new Sidecar(URL_);
  const u = unique("ts-ai");
  const chat = "chat-1";
  const messages = [
    { id: "m1", role: "user", parts: [{ type: "text", text: "Where is the dog?" }], metadata: "from-web" },
    { id: "m2", role: "assistant", parts: [{ type: "text", text: "In the garden." }], metadata: { model: "gpt-x", ms: 812 } },
    { id: "m3", role: "user", parts: [{ type: "text", text: "Thanks" }], metadata: 42 },
    { id: "m4", role: "assistant", parts: [{ type: "step-start" }, { type: "text", text: "You're welcome." }] },
  ];
  const save = async (list) => {
    for (const m of list) {
      await sc.putMessage(u, chat, m.id, { role: m.role, parts: m.parts, ...(m.metadata === undefined ? {} : { metadata: m.metadata }) });
    }
  };
  const load = async () => {
    const out = [];
    for (let after; ; ) {
      const page = await sc.listMessages(u, chat, { limit: 2, after });
      out.push(...page.messages.map(({ id, role, parts, metadata }) => ({ id, role, parts, ...(metadata === undefined ? {} : { metadata }) })));
      if (!page.next_cursor) break;
      after = page.next_cursor;
    }
    const metadataSchema = z.union([z.string(), z.number(), z.object({ model: z.string(), ms: z.number() })]).optional();
    return validateUIMessages({ messages: out, metadataSchema });
  };
  await save(messages.slice(0, 2));
  await save(messages); // the client sends the whole list again: the first two are unchanged
  const got = await load();
  assert.deepEqual(JSON.parse(JSON.stringify(got)), messages); // zod may add metadata: undefined
  assert.equal((await sc.listMessages(u, chat)).messages.length, 4);
  assert.equal((await convertToModelMessages(got)).length, 4);
});
