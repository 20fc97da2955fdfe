// One process's turn for openai-agents-transactions.test.mjs: `node
// openai-agents-worker.mjs URL USER SESSION N` runs turn N ("question N",
// answered "turn N" by a scripted model) of the real SDK's run() on a new
// SidecarSession, then prints {inputs: the model's inputs, items: the
// session's items} as JSON.
import { Agent, Usage, run, setTracingDisabled } from "@openai/agents-core";

import { Sidecar } from "../dist/index.js";
import { SidecarSession } from "../dist/openai-agents.js";

const [url, userId, sessionId, n] = process.argv.slice(2);
setTracingDisabled(true);
const inputs = [];
const model = {
  async getResponse(request) {
    inputs.push(structuredClone(request.input));
    return {
      usage: new Usage(),
      output: [{ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: `turn ${n}` }] }],
    };
  },
  // eslint-disable-next-line require-yield
  async *getStreamedResponse() {
    throw new Error("this model is not streamed");
  },
};
const session = new SidecarSession(new Sidecar(url), userId, sessionId);
await run(new Agent({ name: "a", model }), `question ${n}`, { session });
process.stdout.write(JSON.stringify({ inputs, items: await session.getItems() }));
