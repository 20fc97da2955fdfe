/**
 * The OpenAI Agents SDK's Session interface over the sidecar's messages:
 * `run(agent, input, { session: new SidecarSession(sc, "alice", "chat-1") })`
 * keeps the conversation in the sidecar, shared by every process and pod.
 * Each item is one message holding it unchanged (`item`, `format:
 * "openai.responses"`); each write is one call of the API (a turn too big
 * for one request goes in parts of one operation, visible at once), and a
 * read follows the pages' cursors until it holds what was asked for. Reads are
 * of the raw path (`compacted: false`): a compaction overlay made through
 * the API is for other readers and never shows here, so `popItem` removes
 * exactly the newest item `getItems` showed.
 *
 * Besides `Session` it implements every optional interface of
 * `@openai/agents-core` on the sidecar's atomic, idempotent history
 * transactions (`POST .../messages/transactions`, one Redis script each):
 * `applyHistoryTransaction` (append_items, replace_suffix),
 * `applyHistoryMutations` (replace_function_call, the list in one
 * transaction), `replaceHistoryWithCompaction`
 * (the whole history replaced at once: other pods never see it half done),
 * `runCompaction` (with a `compact` function of yours: the sidecar never
 * calls a model) and `RunContextAwareSession`. The `prepareHistoryItem*`
 * hooks do not apply: items are stored and answered unchanged, with no
 * metadata of the sidecar's to strip.
 * `@openai/agents-core` is a peer dependency, imported for its types only.
 */
import { createHash, randomUUID } from "node:crypto";

import type {
  AgentInputItem,
  OpenAIResponsesCompactionArgs,
  OpenAIResponsesCompactionAwareSession,
  OpenAIResponsesCompactionResult,
  RequestUsage,
  RunContext,
  RunContextAwareSession,
  Session,
  SessionHistoryRewriteArgs,
  SessionHistoryRewriteAwareSession,
  SessionHistoryTransactionArgs,
  SessionHistoryTransactionAwareSession,
} from "@openai/agents-core";

import type { MessageTransaction, Sidecar } from "./sidecar.js";
import { SidecarError } from "./errors.js";

export const FORMAT = "openai.responses";
const PAGE = 1000;

/**
 * A turn within these goes in one append (the sidecar stages a big one
 * itself): at most the 1 000 messages of one request, and a body well under
 * SIDECAR_MAX_MESSAGE_BODY_BYTES (8 MiB by default).
 */
const ONE_CALL_MESSAGES = 1000;
const ONE_CALL_BYTES = 4 << 20;
/**
 * A part of a bigger turn: the sidecar takes at most 100 messages and
 * 256 KiB of their bodies as it encodes them in a part (one message alone
 * whatever its size); 192 KiB of their JSON as sent leaves room for the
 * fields it adds.
 */
const PART_MESSAGES = 100;
const PART_BYTES = 192 << 10;
/** How many times a turn sent in parts is sent, from part 0, when its staged parts were lost. */
const PART_ATTEMPTS = 3;

type Message = Record<string, unknown>;

function role(item: AgentInputItem): string {
  const r = (item as { role?: unknown }).role;
  if (typeof r === "string" && r) return r;
  const t = (item as { type?: unknown }).type;
  return t === "function_call_result" || t === "function_call_output" || t === "computer_call_result" ? "tool" : "assistant";
}

function toItem(m: Message): AgentInputItem {
  if (m.item && typeof m.item === "object") return m.item as AgentInputItem;
  return { role: (m.role as "system") ?? "assistant", content: String(m.content ?? "") } as AgentInputItem;
}

function message(item: AgentInputItem): Record<string, unknown> {
  return { role: role(item), item, format: FORMAT };
}

/** The UTF-8 bytes of m's JSON as sent. */
function jsonBytes(m: Message): number {
  return Buffer.byteLength(JSON.stringify(m));
}

/** The parts of messages of these sizes, each [from, to): at most PART_MESSAGES and PART_BYTES, one message at least. */
function partsOf(sizes: number[]): [number, number][] {
  const out: [number, number][] = [];
  let from = 0;
  let bytes = 0;
  sizes.forEach((n, i) => {
    if (i > from && (i - from === PART_MESSAGES || bytes + n > PART_BYTES)) {
      out.push([from, i]);
      from = i;
      bytes = 0;
    }
    bytes += n;
  });
  out.push([from, sizes.length]);
  return out;
}

/** The API's operation id for the SDK's: as it is when printable ASCII of at most 255 bytes, else a digest. */
function operationId(id: string): string {
  return /^[!-~]{1,255}$/.test(id) ? id : "sha256:" + createHash("sha256").update(id).digest("hex");
}

/** MemorySession's messages for the refusals of a transaction. */
const SDK_MESSAGES: Record<string, string> = {
  operation_conflict: "Session history operation was already applied with a different transaction.",
  suffix_mismatch: "Session history suffix no longer matches the transaction precondition.",
};

const INVALID = "Session history transaction items contain invalid or unsupported data.";

/** Refuses what is not plain JSON: the sidecar stores items as JSON, and a transaction is compared as JSON. */
function plainJSON(v: unknown, seen: Set<object>): void {
  if (v === null || typeof v === "string" || typeof v === "boolean") return;
  if (typeof v === "number") {
    if (Number.isFinite(v)) return;
    throw new TypeError(INVALID);
  }
  if (typeof v !== "object" || seen.has(v)) throw new TypeError(INVALID);
  seen.add(v);
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      if (!(i in v)) throw new TypeError(INVALID);
      plainJSON(v[i], seen);
    }
  } else {
    const proto = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== null) throw new TypeError(INVALID);
    for (const x of Object.values(v)) {
      if (x !== undefined) plainJSON(x, seen);
    }
  }
  seen.delete(v);
}

/** items checked: a list of plain JSON objects. */
function jsonItems(items: unknown): AgentInputItem[] {
  if (!Array.isArray(items)) throw new TypeError("Session history transaction fields are invalid.");
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    if (!(i in items) || !item || typeof item !== "object" || Array.isArray(item)) throw new TypeError(INVALID);
    plainJSON(item, new Set());
  }
  return items as AgentInputItem[];
}

/** What `compact` (SidecarSessionOptions) is given. */
export type CompactionInput = {
  /** The session's items, oldest first. */
  items: AgentInputItem[];
  args?: OpenAIResponsesCompactionArgs;
  runContext?: RunContext<any>;
};

/** What `compact` answers: the history that replaces the items, and what the model call cost. */
export type CompactionOutput = { items: AgentInputItem[]; usage: RequestUsage };

export type SidecarSessionOptions = {
  /**
   * Compacts the history for `runCompaction` (the runner calls it after each
   * turn): e.g. OpenAI's `responses.compact`, or a summary by your model.
   * Answer null to skip this turn. The result replaces the whole history in
   * one transaction. Without it `runCompaction` answers null.
   */
  compact?: (input: CompactionInput) => Promise<CompactionOutput | null> | CompactionOutput | null;
};

export class SidecarSession
  implements
    Session,
    RunContextAwareSession<any>,
    SessionHistoryTransactionAwareSession,
    SessionHistoryRewriteAwareSession,
    OpenAIResponsesCompactionAwareSession
{
  readonly sidecar: Sidecar;
  readonly userId: string;
  readonly sessionId: string;
  /** The runner passes its RunContext to every call (the sidecar keeps no use for it). */
  readonly acceptsRunContext = true as const;
  private readonly compact?: SidecarSessionOptions["compact"];
  /**
   * The latest message id the last read of this object saw ("" for none;
   * undefined once this object wrote since): replaceHistoryWithCompaction's
   * precondition, as the runner reads the history just before it.
   */
  private readLeaf?: string;

  constructor(sidecar: Sidecar, userId: string, sessionId: string, options: SidecarSessionOptions = {}) {
    this.sidecar = sidecar;
    this.userId = userId;
    this.sessionId = sessionId;
    this.compact = options.compact;
  }

  async getSessionId(): Promise<string> {
    return this.sessionId;
  }

  /**
   * The items, oldest first; with limit, exactly the newest `limit` (or all
   * when there are fewer), still oldest first. Pages follow the API's
   * cursors, so no answer cap (`SIDECAR_MAX_ANSWER_BYTES`, a page cut with
   * `Sidecar-Truncated`) and no page size shortens the result. The raw
   * path: compaction overlays are not applied.
   */
  async getItems(limit?: number, _runContext?: RunContext<any>): Promise<AgentInputItem[]> {
    const { sidecar: sc, userId: u, sessionId: s } = this;
    if (limit !== undefined) {
      if (limit <= 0) return [];
      const newest: AgentInputItem[] = [];
      for (let after: string | undefined; newest.length < limit; ) {
        const page = await sc.listMessages(u, s, { order: "desc", limit: Math.min(limit - newest.length, PAGE), after, compacted: false });
        if (after === undefined) this.readLeaf = page.messages.length ? page.messages[0].id : "";
        newest.push(...page.messages.map(toItem));
        if (!page.next_cursor || page.messages.length === 0) break;
        after = page.next_cursor;
      }
      return newest.slice(0, limit).reverse();
    }
    const { items, leaf } = await this.readAll();
    this.readLeaf = leaf;
    return items;
  }

  /** Every item, oldest first, and the id of the latest message read ("" for none). */
  private async readAll(): Promise<{ items: AgentInputItem[]; leaf: string }> {
    const { sidecar: sc, userId: u, sessionId: s } = this;
    const items: AgentInputItem[] = [];
    let leaf = "";
    for (let after: string | undefined; ; ) {
      const page = await sc.listMessages(u, s, { order: "asc", limit: PAGE, after, compacted: false });
      items.push(...page.messages.map(toItem));
      if (page.messages.length) leaf = page.messages[page.messages.length - 1].id;
      if (!page.next_cursor || page.messages.length === 0) return { items, leaf };
      after = page.next_cursor;
    }
  }

  /**
   * Appends the items in order, all or nothing, whatever their count and
   * size: in one call when the turn fits one request (1 000 items and
   * 4 MiB of JSON), else as one append_items operation sent in parts (100
   * items or 192 KiB a part, a bigger item alone), staged by the sidecar
   * until the last part and then visible at once. Parts are sent one after
   * the other; when the sidecar lost the staged parts (409 `part_missing`:
   * their 5 s lease ran out, or the session was deleted) the operation is
   * sent again from part 0, up to 3 times. A refusal (409 `session_full`,
   * 400 for an item past SESSION_MAX_ITEM_BYTES, ...) throws the
   * sidecar's SidecarError, naming the limit, with nothing visible.
   */
  async addItems(items: AgentInputItem[], _runContext?: RunContext<any>): Promise<void> {
    if (items.length === 0) return;
    this.readLeaf = undefined;
    const msgs = items.map(message);
    const sizes = msgs.map(jsonBytes);
    if (msgs.length <= ONE_CALL_MESSAGES && sizes.reduce((a, n) => a + n, 0) <= ONE_CALL_BYTES) {
      try {
        await this.sidecar.appendMessages(this.userId, this.sessionId, msgs);
        return;
      } catch (e) {
        // a sidecar with a smaller body limit: nothing was written, send it in parts
        if (!(e instanceof SidecarError && e.status === 413 && e.code === "body_too_large")) throw e;
      }
    }
    await this.appendInParts(msgs, sizes);
  }

  /** msgs (of these JSON sizes) as one append_items operation sent in parts. */
  private async appendInParts(msgs: Message[], sizes: number[]): Promise<void> {
    const op = randomUUID();
    const parts = partsOf(sizes);
    for (let attempt = 1; ; attempt++) {
      try {
        for (const [i, [from, to]] of parts.entries()) {
          await this.sidecar.applyMessageTransaction(this.userId, this.sessionId, {
            operation_id: op,
            type: "append_items",
            part: i,
            more: i < parts.length - 1,
            messages: msgs.slice(from, to),
          });
        }
        return;
      } catch (e) {
        if (!(e instanceof SidecarError && e.status === 409 && e.code === "part_missing") || attempt >= PART_ATTEMPTS) throw e;
      }
    }
  }

  /**
   * Removes and returns the newest item of the raw path, the last one
   * `getItems` shows: one atomic call, so concurrent pops never return the
   * same item. A compaction overlay ending at that item ends with it (the
   * API's rule for an endpoint); overlays over older items stay.
   */
  async popItem(_runContext?: RunContext<any>): Promise<AgentInputItem | undefined> {
    this.readLeaf = undefined;
    try {
      return toItem(await this.sidecar.popMessage(this.userId, this.sessionId));
    } catch (e) {
      if (e instanceof SidecarError && e.status === 404) return undefined;
      throw e;
    }
  }

  /** Removes every item (the session's record, usage and Q&A entries stay). */
  async clearSession(_runContext?: RunContext<any>): Promise<void> {
    this.readLeaf = undefined;
    try {
      await this.sidecar.clearMessages(this.userId, this.sessionId);
    } catch (e) {
      if (!(e instanceof SidecarError && e.status === 404)) throw e;
    }
  }

  /** One history transaction of the API (retried on outages: the operation id makes a repeat harmless). */
  private async transaction(tx: MessageTransaction): Promise<void> {
    this.readLeaf = undefined;
    await this.sidecar.applyMessageTransaction(this.userId, this.sessionId, tx);
  }

  /**
   * Applies the runner's transaction atomically, idempotent by its
   * operationId (stored with the change; a clearSession forgets it, as
   * MemorySession does): the same id and transaction again changes
   * nothing; another transaction under that id, or a replace_suffix whose
   * expectedSuffix is not the stored suffix, throws (SidecarError 409
   * `operation_conflict` / `suffix_mismatch`, with MemorySession's message)
   * with nothing changed. Items that are not plain JSON (a Date, a cycle,
   * a BigInt, a sparse array) are refused before anything is sent.
   */
  async applyHistoryTransaction(args: SessionHistoryTransactionArgs, _runContext?: RunContext<any>): Promise<void> {
    const id = args?.operationId;
    if (typeof id !== "string" || !id.trim()) throw new TypeError("Session history transaction operationId must be a non-empty string.");
    const t = args.transaction as unknown;
    if (!t || typeof t !== "object") throw new TypeError("Session history transaction must be an object.");
    const op = operationId(id);
    let tx: MessageTransaction;
    const fields = Object.keys(t).sort().join(",");
    if ((t as { type?: unknown }).type === "append_items") {
      if (fields !== "items,type") throw new TypeError("Session history append transaction fields are invalid.");
      const items = jsonItems((t as { items?: unknown }).items);
      // no items: still one transaction, so the operation id is stored
      tx = items.length === 0
        ? { operation_id: op, type: "replace_suffix", expected_suffix: [], messages: [] }
        : { operation_id: op, type: "append_items", messages: items.map(message) };
    } else if ((t as { type?: unknown }).type === "replace_suffix") {
      if (fields !== "expectedSuffix,replacement,type") throw new TypeError("Session history suffix transaction fields are invalid.");
      const { expectedSuffix, replacement } = t as { expectedSuffix?: unknown; replacement?: unknown };
      tx = { operation_id: op, type: "replace_suffix", expected_suffix: jsonItems(expectedSuffix).map(message), messages: jsonItems(replacement).map(message) };
    } else {
      throw new TypeError("Unsupported session history transaction type.");
    }
    try {
      await this.transaction(tx);
    } catch (e) {
      const says = e instanceof SidecarError && e.status === 409 ? SDK_MESSAGES[e.code] : undefined;
      if (says && e instanceof SidecarError) throw new SidecarError(e.status, e.code, `${says} (${e.message})`);
      throw e;
    }
  }

  /**
   * replace_function_call: for each mutation in order, the first item of
   * that call gets the replacement (in its place) and later items of the
   * call go; all of them in one transaction. A call the history does not
   * hold is left alone, as MemorySession does.
   */
  async applyHistoryMutations(args: SessionHistoryRewriteArgs): Promise<void> {
    const replacements = args.mutations
      .filter((m) => m.type === "replace_function_call")
      .map((m) => ({ call_id: m.callId, message: message(m.replacement) }));
    if (replacements.length === 0) return;
    try {
      await this.transaction({ operation_id: randomUUID(), type: "replace_function_call", replacements });
    } catch (e) {
      if (!(e instanceof SidecarError && e.status === 404)) throw e;
    }
  }

  /**
   * Replaces the whole history by items (a compaction's output) in one
   * transaction. When this object's last call was a read (the runner reads
   * the history just before), only while the latest message is still the
   * one that read saw (`expected_leaf`): a turn another pod appended since
   * is never erased; it throws SidecarError 409 `suffix_mismatch` instead,
   * with nothing changed.
   */
  async replaceHistoryWithCompaction(items: AgentInputItem[], _runContext?: RunContext<any>): Promise<void> {
    await this.replaceHistory(items, this.readLeaf);
  }

  private async replaceHistory(items: AgentInputItem[], expectedLeaf: string | undefined): Promise<void> {
    const tx: MessageTransaction = { operation_id: randomUUID(), type: "replace_history", messages: items.map(message) };
    if (expectedLeaf !== undefined) tx.expected_leaf = expectedLeaf;
    await this.transaction(tx);
  }

  /**
   * Runs the `compact` function given to the constructor on the whole
   * history and replaces it with the result in one transaction, only while
   * the latest message is still the last one read (`expected_leaf`); null
   * when there is no such function or it skipped this turn. When another
   * pod appended meanwhile nothing is replaced (its turn stays; the next
   * turn compacts again) and the compaction's usage is still answered.
   */
  async runCompaction(args?: OpenAIResponsesCompactionArgs, runContext?: RunContext<any>): Promise<OpenAIResponsesCompactionResult | null> {
    if (!this.compact) return null;
    const { items, leaf } = await this.readAll();
    const out = await this.compact({ items, args, runContext });
    if (!out) return null;
    try {
      await this.replaceHistory(out.items, leaf);
    } catch (e) {
      if (!(e instanceof SidecarError && e.status === 409 && e.code === "suffix_mismatch")) throw e;
    }
    return { usage: out.usage };
  }
}
