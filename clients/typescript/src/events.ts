/** The event stream (text/event-stream) over fetch, reconnecting with Last-Event-ID. */
import { sleep } from "./client.js";
import { errorFrom } from "./errors.js";

/** One event: its id, its type (entry_appended, message_appended, reconnected, deleted, x-…) and its decoded data. */
export interface SidecarEvent {
  id: string;
  event: string;
  data: unknown;
}

interface Streamer {
  readonly baseUrl: string;
  readonly headers: Record<string, string>;
  fetch(request: Request): Promise<Response>;
}

/** Yields the events of the stream at path, resuming after lastEventId; reconnects until `deleted` or abort. */
export async function* eventStream(
  sc: Streamer,
  path: string,
  opts: { lastEventId?: string; signal?: AbortSignal },
): AsyncGenerator<SidecarEvent> {
  let lastId = opts.lastEventId;
  let retry = 3000;
  const signal = opts.signal;
  while (!signal?.aborted) {
    const headers: Record<string, string> = { ...sc.headers, Accept: "text/event-stream", "Cache-Control": "no-cache" };
    if (lastId) headers["Last-Event-ID"] = lastId;
    let response: Response;
    try {
      response = await sc.fetch(new Request(sc.baseUrl + path, { headers, signal }));
    } catch (e) {
      if (signal?.aborted) return;
      await sleep(retry, signal);
      continue;
    }
    if (response.status !== 200 || !response.body) {
      const err = await errorFrom(response);
      if (response.status !== 503) throw err;
      await sleep(err.retryAfter !== undefined ? err.retryAfter * 1000 : retry, signal);
      continue;
    }
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    let id: string | undefined;
    let type = "message";
    let data: string[] = [];
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let nl: number;
        while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + (buf.startsWith("\r\n", nl) ? 2 : 1));
          if (line === "") {
            if (data.length || id !== undefined) {
              if (id !== undefined) lastId = id;
              const ev: SidecarEvent = { id: id ?? "", event: type, data: decode(data.join("\n")) };
              yield ev;
              if (ev.event === "deleted") return;
            }
            id = undefined;
            type = "message";
            data = [];
            continue;
          }
          if (line.startsWith(":")) continue;
          const i = line.indexOf(":");
          const field = i < 0 ? line : line.slice(0, i);
          let v = i < 0 ? "" : line.slice(i + 1);
          if (v.startsWith(" ")) v = v.slice(1);
          if (field === "id") id = v;
          else if (field === "event") type = v;
          else if (field === "data") data.push(v);
          else if (field === "retry" && /^\d+$/.test(v)) retry = Number(v);
        }
      }
    } catch {
      // dropped: reconnect below
    } finally {
      reader.cancel().catch(() => undefined);
    }
    if (signal?.aborted) return;
    await sleep(retry, signal);
  }
}

function decode(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
