// clients.md#5
import { convertToModelMessages, streamText, validateUIMessages, type LanguageModel, type UIMessage } from "ai";
import { Sidecar } from "@agentsidecar/client";

const sc = new Sidecar(process.env.SIDECAR_URL ?? "http://127.0.0.1:7480");

/** Saves every message of the chat by its id: those already stored, unchanged, write nothing. */
export async function saveChat(userId: string, chatId: string, messages: UIMessage[]): Promise<void> {
  for (const m of messages) {
    await sc.putMessage(userId, chatId, m.id, { role: m.role, parts: m.parts, ...(m.metadata === undefined ? {} : { metadata: m.metadata }) });
  }
}

/** The chat's messages, oldest first; none for a new chat (validateUIMessages refuses an empty list). */
export async function loadChat(userId: string, chatId: string): Promise<UIMessage[]> {
  const out: unknown[] = [];
  for (let after: string | undefined; ; ) {
    const page = await sc.listMessages(userId, chatId, { limit: 1000, after });
    out.push(...page.messages.map(({ id, role, parts, metadata }) => ({ id, role, parts, ...(metadata === undefined ? {} : { metadata }) })));
    if (!page.next_cursor) break;
    after = page.next_cursor;
  }
  return out.length === 0 ? [] : validateUIMessages({ messages: out });
}

/** The route: the chat so far and the user's new message to the model, its answer streamed back and saved when it ends. */
export async function chat(userId: string, chatId: string, message: UIMessage, model: LanguageModel): Promise<Response> {
  const messages = [...(await loadChat(userId, chatId)), message];
  const result = streamText({ model, messages: await convertToModelMessages(messages) });
  return result.toUIMessageStreamResponse({
    originalMessages: messages,
    generateMessageId: () => crypto.randomUUID(), // without it the answer's id is "", which no message may have
    onFinish: ({ messages }) => saveChat(userId, chatId, messages).catch((e) => console.error(`saving chat ${chatId}:`, e)),
  });
}
