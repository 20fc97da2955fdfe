// clients.md#1
import { Sidecar, SidecarError } from "@agentsidecar/client";

const sc = new Sidecar(process.env.SIDECAR_URL ?? "http://127.0.0.1:7480", { token: process.env.SIDECAR_API_TOKEN });
await sc.appendEntry("alice", "chat-1", { qa_id: "turn-1", question: "Where is the dog?", answer: "In the garden" });
await sc.recordUsage("alice", "chat-1", { model: "gpt-4o-mini", input_text: "Where is the dog?", output_text: "In the garden" });
await sc.withLock("notes-alice", { ttl: 30, wait: 10 }, (lock) => sc.patchUserState("alice", { notes_fence: lock.fencingToken }));
console.log((await sc.getSession("alice", "chat-1")).entry_count, "entries");
await sc.getEntry("alice", "chat-1", "nope").catch((e) => {
  if (e instanceof SidecarError) console.log(e.status, e.code);
});
