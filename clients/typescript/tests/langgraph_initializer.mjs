// The CheckpointerTestInitializer that @langchain/langgraph-checkpoint-validation
// runs (langgraph.test.mjs starts its CLI on this file): each checkpointer
// gets a user of its own on the sidecar under test, so the suite's list
// across threads sees only that checkpointer's threads; destroying it
// deletes them.
import { SidecarCheckpointSaver } from "../dist/langgraph.js";
import { URL_, unique } from "./support.mjs";

export default {
  checkpointerName: "@agentsidecar/client/langgraph",
  createCheckpointer() {
    return new SidecarCheckpointSaver({ baseUrl: URL_, userId: unique("lg") });
  },
  async destroyCheckpointer(saver) {
    for await (const s of saver.sidecar.allUserSessions(saver.userId)) await saver.sidecar.deleteSession(saver.userId, s.session_id);
  },
};
