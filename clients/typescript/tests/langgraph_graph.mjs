// The LangGraph graph langgraph.test.mjs and its worker process both
// compile: plan, then ask (an interrupt waiting for a human's answer),
// then act, each appending to the log.
import { Annotation, END, START, StateGraph, interrupt } from "@langchain/langgraph";
import { SidecarCheckpointSaver } from "../dist/langgraph.js";

const State = Annotation.Root({
  log: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

export function graph(baseUrl, userId, token) {
  const saver = new SidecarCheckpointSaver({ baseUrl, userId, token });
  const g = new StateGraph(State)
    .addNode("plan", () => ({ log: ["plan"] }))
    .addNode("ask", () => ({ log: [`approved:${interrupt("approve?")}`] }))
    .addNode("act", () => ({ log: ["act"] }))
    .addEdge(START, "plan")
    .addEdge("plan", "ask")
    .addEdge("ask", "act")
    .addEdge("act", END);
  return { saver, app: g.compile({ checkpointer: saver }) };
}
