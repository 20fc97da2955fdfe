/**
 * LangGraph's checkpoint saver over the sidecar:
 * `graph.compile({ checkpointer: new SidecarCheckpointSaver({ baseUrl }) })`
 * keeps every thread's checkpoints in the sidecar's Redis, shared by every
 * process and pod.
 *
 * A thread is a session of the sidecar: user = `userId` (one fixed user,
 * "langgraph", by default), session = the `thread_id` (written
 * `b64.<base64url>` when it holds characters session ids refuse, or starts
 * with `b64.`). Its checkpoints slide with the session's TTL, show in its
 * record, and go with `deleteThread` (the session's delete) or the user's
 * erasure. Each `put` and each `putWrites` is one call and one atomic
 * script on the sidecar; reads page (`list` follows `next_before`), so
 * nothing is cut short.
 *
 * What the saver serialized stays opaque to the sidecar: a checkpoint (its
 * channel values apart), each channel's value at its version (stored once
 * per version, as LangGraph's Postgres saver does) and each pending write
 * are `{type, data}`, data the base64 of the serde's bytes. Metadata is sent
 * as the serde's JSON (as LangGraph's Postgres saver keeps it), so `list`'s
 * `filter` runs on the sidecar and reads revive it with the serde.
 *
 * `@langchain/langgraph-checkpoint` is an optional peer dependency: only
 * this entry point (`@agentsidecar/client/langgraph`) imports it.
 */
import {
  BaseCheckpointSaver,
  TASKS,
  WRITES_IDX_MAP,
  copyCheckpoint,
  maxChannelVersion,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  type PendingWrite,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";

import type { SidecarOptions } from "./client.js";
import { SidecarError } from "./errors.js";
import type { components } from "./schema.js";
import { Sidecar } from "./sidecar.js";

/** The user a saver keeps its threads under when given none. */
export const DEFAULT_USER = "langgraph";

/** The prefix of a session id that encodes a thread id. */
const ENCODED = "b64.";
const ID = /^[A-Za-z0-9_.@-]{1,128}$/;
/** The most checkpoints one list call answers (the sidecar's cap). */
const PAGE = 100;

/** The session id of thread id t: t itself when the sidecar takes it. */
export function sessionIdOf(t: string): string {
  if (ID.test(t) && t !== "." && t !== ".." && !t.startsWith(ENCODED)) return t;
  const s = ENCODED + Buffer.from(t, "utf8").toString("base64url");
  if (s.length > 128) throw new TypeError(`thread_id ${JSON.stringify(t.slice(0, 40))}…: more than the 93 bytes of UTF-8 a session id can hold encoded`);
  return s;
}

/** The thread id of session id s (sessionIdOf's inverse). */
export function threadIdOf(s: string): string {
  return s.startsWith(ENCODED) ? Buffer.from(s.slice(ENCODED.length), "base64url").toString("utf8") : s;
}

export interface SidecarCheckpointSaverOptions extends SidecarOptions {
  /** The sidecar's API, e.g. http://127.0.0.1:7480. */
  baseUrl: string;
  /** The user the threads live under (a session id's user); default "langgraph". */
  userId?: string;
  /** LangGraph's serializer; default its JSON-plus serde. */
  serde?: SerializerProtocol;
}

type StoredTuple = components["schemas"]["CheckpointTuple"];

function b64(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("base64");
}
function bytes(data: string): Uint8Array {
  return new Uint8Array(Buffer.from(data, "base64"));
}
/**
 * A LangGraph checkpointer on the sidecar. It is a `BaseCheckpointSaver`
 * of LangGraph's default version type (`number`), what
 * `graph.compile({ checkpointer })` expects, though the versions it makes
 * are strings (getNextVersion); LangGraph only compares them, with the
 * rules it has for both kinds.
 */
export class SidecarCheckpointSaver extends BaseCheckpointSaver {
  readonly sidecar: Sidecar;
  readonly userId: string;

  constructor({ baseUrl, userId = DEFAULT_USER, serde, ...options }: SidecarCheckpointSaverOptions) {
    super(serde);
    if (!ID.test(userId) || userId === "." || userId === "..") throw new TypeError(`userId ${JSON.stringify(userId)}: want 1-128 of A-Z a-z 0-9 _ . @ -`);
    this.sidecar = new Sidecar(baseUrl, options);
    this.userId = userId;
  }

  /**
   * A channel's next version: the count, then a random part, as LangGraph's
   * Postgres saver makes them. A value is stored once per (channel,
   * version), so a thread forked from an earlier checkpoint must not write
   * the versions its first branch wrote. Typed `number` (LangGraph's
   * default version type, so that `compile({ checkpointer })` takes this
   * saver), a string at run time: compare versions, never add to them.
   */
  override getNextVersion(current: string | number | undefined): number {
    const n = current === undefined ? 0 : typeof current === "number" ? current : Number(String(current).split(".")[0]);
    return `${String(n + 1).padStart(32, "0")}.${Math.random().toString().slice(2, 18)}` as unknown as number;
  }

  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const threadId = config.configurable?.thread_id;
    if (threadId === undefined || threadId === null) return undefined;
    const ns: string = config.configurable?.checkpoint_ns ?? "";
    const id: string | undefined = config.configurable?.checkpoint_id || undefined;
    const t = await this.read(String(threadId), ns, id);
    return t && this.tuple(String(threadId), t);
  }

  async *list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const { before, filter } = options;
    let remaining = options.limit;
    if (remaining !== undefined && remaining <= 0) return;
    const threadId = config.configurable?.thread_id;
    const ns: string | undefined = config.configurable?.checkpoint_ns;
    const only: string | undefined = config.configurable?.checkpoint_id || undefined;
    const threads = threadId !== undefined && threadId !== null ? [String(threadId)] : this.threads();
    for await (const thread of threads) {
      let cursor: string | undefined = before?.configurable?.checkpoint_id || undefined;
      for (;;) {
        const page = await this.sidecar.listCheckpoints(this.userId, sessionIdOf(thread), {
          checkpoint_ns: ns,
          before: cursor,
          filter,
          limit: Math.min(remaining ?? PAGE, PAGE),
        });
        for (const t of page.checkpoints) {
          if (only !== undefined && t.checkpoint_id !== only) continue;
          yield await this.tuple(thread, t);
          if (remaining !== undefined && --remaining <= 0) return;
        }
        if (!page.next_before) break;
        cursor = page.next_before;
      }
    }
  }

  async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    const threadId = config.configurable?.thread_id;
    if (threadId === undefined || threadId === null) {
      throw new Error('put: the config has no "thread_id" in "configurable"; LangGraph needs one to know which thread to keep');
    }
    const ns: string = config.configurable?.checkpoint_ns ?? "";
    const parent: string | undefined = config.configurable?.checkpoint_id || undefined;
    const copy = copyCheckpoint(checkpoint);
    const values = copy.channel_values ?? {};
    const rest = { ...copy, channel_values: {} } as Checkpoint;
    const [type, data] = await this.serde.dumpsTyped(rest);
    const channelValues = [];
    for (const [channel, version] of Object.entries(newVersions)) {
      if (!(channel in values) || values[channel] === undefined) continue;
      const [t, d] = await this.serde.dumpsTyped(values[channel]);
      channelValues.push({ channel, version: String(version), type: t, data: b64(d) });
    }
    const channelVersions = Object.fromEntries(Object.entries(copy.channel_versions ?? {}).map(([k, v]) => [k, String(v)]));
    await this.sidecar.putCheckpoint(this.userId, sessionIdOf(String(threadId)), {
      checkpoint_ns: ns,
      checkpoint_id: checkpoint.id,
      parent_checkpoint_id: parent ?? null,
      checkpoint: { type, data: b64(data) },
      metadata: await this.dumpMetadata(metadata),
      channel_versions: channelVersions,
      channel_values: channelValues,
    });
    return { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpoint.id } };
  }

  /**
   * The metadata as LangGraph's savers keep it: the serde's JSON
   * (`dumpsTyped`, as MemorySaver's and the Postgres saver's), so what the
   * serde encodes (messages, say) comes back through `loadsTyped("json")`
   * on read; plain JSON when the serde answers another type.
   */
  private async dumpMetadata(metadata: CheckpointMetadata | undefined): Promise<Record<string, never>> {
    const [type, data] = await this.serde.dumpsTyped(metadata ?? {});
    if (type === "json") return JSON.parse(new TextDecoder().decode(data));
    return JSON.parse(JSON.stringify(metadata ?? {}));
  }

  async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void> {
    const threadId = config.configurable?.thread_id;
    const id: string | undefined = config.configurable?.checkpoint_id;
    if (threadId === undefined || threadId === null) throw new Error('putWrites: the config has no "thread_id" in "configurable"');
    if (!id) throw new Error('putWrites: the config has no "checkpoint_id" in "configurable"');
    const list = [];
    for (const [i, [channel, value]] of writes.entries()) {
      const [type, data] = await this.serde.dumpsTyped(value);
      list.push({ idx: WRITES_IDX_MAP[channel] ?? i, channel, type, data: b64(data) });
    }
    // A retry stores each write once: the sidecar keeps the first of a
    // (task, idx) and replaces only the special channels' (idx < 0).
    await this.sidecar.putCheckpointWrites(this.userId, sessionIdOf(String(threadId)), {
      checkpoint_ns: config.configurable?.checkpoint_ns ?? "",
      checkpoint_id: id,
      task_id: taskId,
      task_path: taskPath ?? "",
      writes: list,
    });
  }

  async deleteThread(threadId: string): Promise<void> {
    try {
      await this.sidecar.deleteSession(this.userId, sessionIdOf(threadId));
    } catch (e) {
      if (!(e instanceof SidecarError && e.status === 404)) throw e;
    }
  }

  /** The user's threads, from its sessions (every status). */
  private async *threads(): AsyncGenerator<string> {
    for await (const s of this.sidecar.allUserSessions(this.userId)) yield threadIdOf(s.session_id);
  }

  /** One stored checkpoint, undefined when there is none. */
  private async read(thread: string, ns: string, id?: string): Promise<StoredTuple | undefined> {
    try {
      return await this.sidecar.getCheckpointTuple(this.userId, sessionIdOf(thread), { checkpoint_ns: ns, checkpoint_id: id });
    } catch (e) {
      if (e instanceof SidecarError && e.status === 404) return undefined;
      throw e;
    }
  }

  private async tuple(thread: string, t: StoredTuple): Promise<CheckpointTuple> {
    const ns = t.checkpoint_ns;
    const checkpoint = (await this.serde.loadsTyped(t.checkpoint.type, bytes(t.checkpoint.data))) as Checkpoint;
    checkpoint.channel_values = {};
    for (const v of t.channel_values) checkpoint.channel_values[v.channel] = await this.serde.loadsTyped(v.type, bytes(v.data));
    const pendingWrites: CheckpointPendingWrite[] = [];
    for (const w of t.pending_writes) pendingWrites.push([w.task_id ?? "", w.channel, await this.serde.loadsTyped(w.type, bytes(w.data))]);
    const parent = t.parent_checkpoint_id ?? undefined;
    if (checkpoint.v < 4 && parent !== undefined) await this.migratePendingSends(checkpoint, thread, ns, parent);
    const out: CheckpointTuple = {
      config: { configurable: { thread_id: thread, checkpoint_ns: ns, checkpoint_id: t.checkpoint_id } },
      checkpoint,
      metadata: (await this.serde.loadsTyped("json", JSON.stringify(t.metadata ?? {}))) as CheckpointMetadata,
      pendingWrites,
    };
    if (parent !== undefined) out.parentConfig = { configurable: { thread_id: thread, checkpoint_ns: ns, checkpoint_id: parent } };
    return out;
  }

  /** A checkpoint older than format 4 gets its parent's pending sends as the TASKS channel, as LangGraph's savers do. */
  private async migratePendingSends(checkpoint: Checkpoint, thread: string, ns: string, parent: string): Promise<void> {
    const p = await this.read(thread, ns, parent);
    const sends = [];
    for (const w of p?.pending_writes ?? []) if (w.channel === TASKS) sends.push(await this.serde.loadsTyped(w.type, bytes(w.data)));
    checkpoint.channel_values ??= {};
    checkpoint.channel_values[TASKS] = sends;
    checkpoint.channel_versions ??= {};
    const versions = Object.values(checkpoint.channel_versions);
    checkpoint.channel_versions[TASKS] = versions.length > 0 ? maxChannelVersion(...versions) : this.getNextVersion(undefined);
  }
}
