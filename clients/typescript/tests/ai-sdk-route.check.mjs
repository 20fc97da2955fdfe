// docs/clients.md's AI SDK chat route, run as it is: TestDocsAISDKRoute
// (clients/docs_test.go) compiles the page's block to .ai-sdk-route.mjs,
// then runs this file with node --test. The AI SDK's own mock model
// streams an answer through streamText and toUIMessageStreamResponse; the
// route saves the chat when the answer ends and loads it on the next turn,
// for a new chat and one that exists.
import assert from "node:assert/strict";
import { test } from "node:test";

import { simulateReadableStream } from "ai";
import { MockLanguageModelV3 } from "ai/test";

import { chat, loadChat } from "./.ai-sdk-route.mjs";
import { Sidecar } from "../dist/index.js";
import { URL_, skip, unique } from "./support.mjs";

/** A mock model answering text in three chunks; it keeps the prompts it got. */
function model(text) {
  const prompts = [];
  const m = new MockLanguageModelV3({
    doStream: async ({ prompt }) => {
      prompts.push(prompt);
      const parts = [text.slice(0, 3), text.slice(3, 7), text.slice(7)];
      return {
        stream: simulateReadableStream({
          chunks: [
            { type: "stream-start", warnings: [] },
            { type: "text-start", id: "t1" },
            ...parts.map((delta) => ({ type: "text-delta", id: "t1", delta })),
            { type: "text-end", id: "t1" },
            {
              type: "finish",
              finishReason: { unified: "stop", raw: "stop" },
              usage: {
                inputTokens: { total: 3, noCache: 3, cacheRead: 0, cacheWrite: 0 },
                outputTokens: { total: 4, text: 4, reasoning: 0 },
              },
            },
          ],
        }),
      };
    },
  });
  return { m, prompts };
}

const user = (id, text) => ({ id, role: "user", parts: [{ type: "text", text }] });

/** Reads the route's answer to its end: the stream's finish runs onFinish (the save). */
async function drain(res) {
  assert.equal(res.status, 200);
  const body = await res.text();
  assert.match(body, /text-delta/);
  return body;
}

test("the chat route of docs/clients.md: a new chat, then the same chat again", { skip }, async () => {
  const sc = new Sidecar(URL_);
  const u = unique("ts-route");
  const chatId = "chat-1";
  assert.deepEqual(await loadChat(u, chatId), [], "a new chat loads as no messages");

  const first = model("In the garden.");
  await drain(await chat(u, chatId, user("m1", "Where is the dog?"), first.m));
  const after1 = await loadChat(u, chatId);
  assert.deepEqual(
    after1.map((m) => [m.role, m.parts.filter((p) => p.type === "text").map((p) => p.text)]),
    [
      ["user", ["Where is the dog?"]],
      ["assistant", ["In the garden."]],
    ],
  );
  assert.equal(after1[0].id, "m1");
  assert.match(after1[1].id, /^[0-9a-f-]{36}$/, "the answer's id is the route's generateMessageId");

  const second = model("On the roof.");
  await drain(await chat(u, chatId, user("m2", "And the cat?"), second.m));
  // the model saw the whole chat so far
  const seen = second.prompts[0].filter((p) => p.role !== "system").map((p) => [p.role, p.content.map((c) => c.text).join("")]);
  assert.deepEqual(seen, [
    ["user", "Where is the dog?"],
    ["assistant", "In the garden."],
    ["user", "And the cat?"],
  ]);
  const after2 = await loadChat(u, chatId);
  assert.deepEqual(
    after2.map((m) => [m.role, m.parts.filter((p) => p.type === "text").map((p) => p.text).join("")]),
    [
      ["user", "Where is the dog?"],
      ["assistant", "In the garden."],
      ["user", "And the cat?"],
      ["assistant", "On the roof."],
    ],
  );
  assert.equal(after2[1].id, after1[1].id, "the first answer kept its id when the chat was saved again");
  assert.equal((await sc.listMessages(u, chatId)).messages.length, 4, "each message stored once");
});
