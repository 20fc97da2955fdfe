/**
 * The OpenAI Agents SDK's Session interface over the sidecar's messages:
 * `run(agent, input, { session: new SidecarSession(sc, "alice", "chat-1") })`
 * keeps the conversation in the sidecar, shared by every process and pod.
 * Each item is one message holding it unchanged (`item`, `format:
 * "openai.responses"`); each write is one call of the API, and a read
 * follows the pages' cursors until it holds what was asked for. Reads are
 * of the raw path (`compacted: false`): a compaction overlay made through
 * the API is for other readers and never shows here, so `popItem` removes
 * exactly the newest item `getItems` showed.
 * `@openai/agents-core` is a peer dependency, imported for its types only.
 */
import type { AgentInputItem, Session } from "@openai/agents-core";

import type { Sidecar } from "./sidecar.js";
import { SidecarError } from "./errors.js";

export const FORMAT = "openai.responses";
const PAGE = 1000;

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

export class SidecarSession implements Session {
  readonly sidecar: Sidecar;
  readonly userId: string;
  readonly sessionId: string;

  constructor(sidecar: Sidecar, userId: string, sessionId: string) {
    this.sidecar = sidecar;
    this.userId = userId;
    this.sessionId = sessionId;
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
  async getItems(limit?: number): Promise<AgentInputItem[]> {
    const { sidecar: sc, userId: u, sessionId: s } = this;
    if (limit !== undefined) {
      if (limit <= 0) return [];
      const newest: AgentInputItem[] = [];
      for (let after: string | undefined; newest.length < limit; ) {
        const page = await sc.listMessages(u, s, { order: "desc", limit: Math.min(limit - newest.length, PAGE), after, compacted: false });
        newest.push(...page.messages.map(toItem));
        if (!page.next_cursor || page.messages.length === 0) break;
        after = page.next_cursor;
      }
      return newest.slice(0, limit).reverse();
    }
    const items: AgentInputItem[] = [];
    for (let after: string | undefined; ; ) {
      const page = await sc.listMessages(u, s, { order: "asc", limit: PAGE, after, compacted: false });
      items.push(...page.messages.map(toItem));
      if (!page.next_cursor || page.messages.length === 0) return items;
      after = page.next_cursor;
    }
  }

  /** Appends the items in order, in one call (all or nothing). */
  async addItems(items: AgentInputItem[]): Promise<void> {
    if (items.length === 0) return;
    await this.sidecar.appendMessages(
      this.userId,
      this.sessionId,
      items.map((item) => ({ role: role(item), item, format: FORMAT })),
    );
  }

  /**
   * Removes and returns the newest item of the raw path, the last one
   * `getItems` shows: one atomic call, so concurrent pops never return the
   * same item. A compaction overlay ending at that item ends with it (the
   * API's rule for an endpoint); overlays over older items stay.
   */
  async popItem(): Promise<AgentInputItem | undefined> {
    try {
      return toItem(await this.sidecar.popMessage(this.userId, this.sessionId));
    } catch (e) {
      if (e instanceof SidecarError && e.status === 404) return undefined;
      throw e;
    }
  }

  /** Removes every item (the session's record, usage and Q&A entries stay). */
  async clearSession(): Promise<void> {
    try {
      await this.sidecar.clearMessages(this.userId, this.sessionId);
    } catch (e) {
      if (!(e instanceof SidecarError && e.status === 404)) throw e;
    }
  }
}
