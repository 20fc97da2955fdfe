// A second process for langgraph.test.mjs: resumes thread argv[4] of user
// argv[3] on the sidecar at argv[2] with the answer argv[5], and prints
// the final state as JSON. SIDECAR_TOKEN, when set, is the sidecar's token.
import { Command } from "@langchain/langgraph";
import { graph } from "./langgraph_graph.mjs";

const [, , baseUrl, userId, threadId, answer] = process.argv;
const { app } = graph(baseUrl, userId, process.env.SIDECAR_TOKEN || undefined);
const out = await app.invoke(new Command({ resume: answer }), { configurable: { thread_id: threadId } });
process.stdout.write(JSON.stringify(out));
