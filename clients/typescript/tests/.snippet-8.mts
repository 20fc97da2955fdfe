// mcp.md#2
import { LlmAgent, MCPToolset } from "@google/adk";

const memory = new MCPToolset({
  type: "StreamableHTTPConnectionParams",
  url: "http://127.0.0.1:7480/v1/users/alice/sessions/weather.chat-1/mcp",
  transportOptions: { requestInit: { headers: { Authorization: `Bearer ${process.env.SIDECAR_API_TOKEN}` } } },
});
const agent = new LlmAgent({ name: "assistant", model: "gemini-2.5-flash", instruction: "Keep what you learn in your context blocks.", tools: [memory] });
