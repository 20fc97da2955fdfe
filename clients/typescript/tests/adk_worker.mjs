// One turn of an ADK agent in a process of its own, for adk.test.mjs:
// node adk_worker.mjs <app> <user> <session> <text> [create]
// The agent's model is a fake (a BaseLlm answering from what it is sent);
// the session lives in the sidecar (SIDECAR_URL). Prints one JSON line:
// {seen: the texts of the request's contents, reply: the model's text}.
import { BaseLlm, LlmAgent, Runner } from "@google/adk";

import { SidecarSessionService } from "../dist/adk.js";

const [app, user, session, text, create] = process.argv.slice(2);

class FakeLlm extends BaseLlm {
  constructor() {
    super({ model: "fake-llm" });
    this.seen = [];
  }
  async *generateContentAsync(request) {
    this.seen = (request.contents ?? []).flatMap((c) => (c.parts ?? []).map((p) => p.text).filter((t) => t !== undefined));
    yield { content: { role: "model", parts: [{ text: `reply ${this.seen.length} to ${this.seen.at(-1)}` }] }, turnComplete: true };
  }
  async connect() {
    throw new Error("no live connection in tests");
  }
}

const model = new FakeLlm();
const agent = new LlmAgent({ name: "helper", model, instruction: "Answer briefly.", outputKey: "last_reply" });
const sessionService = new SidecarSessionService({ baseUrl: process.env.SIDECAR_URL });
if (create === "create") await sessionService.createSession({ appName: app, userId: user, sessionId: session, state: { topic: "dogs" } });
const runner = new Runner({ appName: app, agent, sessionService });
let reply = "";
for await (const ev of runner.runAsync({
  userId: user,
  sessionId: session,
  newMessage: { role: "user", parts: [{ text }] },
  stateDelta: { "user:turns_from": process.pid, "temp:scratch": 1 },
})) {
  for (const p of ev.content?.parts ?? []) if (ev.author === "helper" && p.text) reply = p.text;
}
console.log(JSON.stringify({ seen: model.seen, reply }));
