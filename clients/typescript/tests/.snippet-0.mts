// adk.md#1
import { LlmAgent, Runner } from "@google/adk";
import { SidecarSessionService } from "@agentsidecar/client/adk";

const agent = new LlmAgent({ name: "forecaster", model: "gemini-2.5-flash", instruction: "Answer about the weather." });
const runner = new Runner({ appName: "weather", agent, sessionService: new SidecarSessionService({ baseUrl: "http://127.0.0.1:7480" }) });
