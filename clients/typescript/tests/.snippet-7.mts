// mcp.md#1
import { Agent, MCPServerStreamableHttp, run } from "@openai/agents";

const base = "http://127.0.0.1:7480/v1/users/alice/sessions/chat-1";
const memory = new MCPServerStreamableHttp({
  url: `${base}/mcp`,
  name: "memory",
  requestInit: { headers: { Authorization: `Bearer ${process.env.SIDECAR_API_TOKEN}` } },
});
await memory.connect();
const systemPrompt = "agentsidecar://users/alice/sessions/chat-1/system-prompt";
const agent = new Agent({
  name: "assistant",
  // an empty prompt comes as an empty blob
  instructions: async () => {
    const [c] = (await memory.readResource(systemPrompt)).contents;
    return typeof c?.text === "string" ? c.text : "";
  },
  mcpServers: [memory],
});
console.log((await run(agent, "I prefer tea over coffee.")).finalOutput);
await memory.close();
