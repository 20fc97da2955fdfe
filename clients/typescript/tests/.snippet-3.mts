// clients.md#2
import { Agent, run } from "@openai/agents";
import { Sidecar } from "@agentsidecar/client";
import { SidecarSession } from "@agentsidecar/client/openai-agents";

const agent = new Agent({ name: "Assistant", instructions: "Answer briefly." });
const session = new SidecarSession(new Sidecar("http://127.0.0.1:7480"), "alice", "chat-1");
const result = await run(agent, "Where is the dog?", { session });
console.log(result.finalOutput);
