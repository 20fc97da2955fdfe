// checkpoints.md#1
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";
import { SidecarCheckpointSaver } from "@agentsidecar/client/langgraph";

const State = Annotation.Root({ log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }) });
const graph = new StateGraph(State).addNode("plan", () => ({ log: ["plan"] })).addEdge(START, "plan").addEdge("plan", END);
const app = graph.compile({ checkpointer: new SidecarCheckpointSaver({ baseUrl: "http://127.0.0.1:7480" }) });
await app.invoke({ log: [] }, { configurable: { thread_id: "chat-1" } });
