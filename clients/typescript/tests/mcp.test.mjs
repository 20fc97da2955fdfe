// Each session as a Model Context Protocol server, through clients others
// wrote: the official TypeScript SDK's client (@modelcontextprotocol/sdk)
// over Streamable HTTP, behind the token; the OpenAI Agents SDK's
// MCPServerStreamableHttp (@modelcontextprotocol/client underneath) with a
// scripted model calling set_context; one client whose requests go to
// two sidecars on one Redis in turn; Google ADK's MCPToolset; and
// LangGraph's ToolNode running @langchain/mcp-adapters' tools.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

import { TOKEN, TOKEN_URL, URL_, document, skip, unique } from "./support.mjs";

const MCP = "/v1/users/{user_id}/sessions/{session_id}/mcp";
const absent =
  skip || (!TOKEN_URL && "SIDECAR_TOKEN_URL is not set") || (!(await document()).paths?.[MCP]?.post && `the sidecar serves no ${MCP} yet`);

const auth = { Authorization: `Bearer ${TOKEN}` };
const mcpURL = (base, u, s) => new URL(`${base}/v1/users/${u}/sessions/${s}/mcp`);

/** A REST call to the guarded sidecar: the parsed answer, or the text. */
async function rest(method, path, body) {
  const r = await fetch(TOKEN_URL + path, {
    method,
    headers: { ...auth, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  assert.ok(r.ok, `${method} ${path}: ${r.status} ${text}`);
  return (r.headers.get("content-type") ?? "").startsWith("application/json") ? JSON.parse(text) : text;
}

async function connect(url, opts = {}) {
  const client = new Client({ name: "sidecar-mcp-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: auth }, ...opts }));
  return client;
}

test("the official TypeScript SDK's client: initialize, list, call, errors, prompt, resources", { skip: absent }, async () => {
  const u = unique("ts-mcp");
  const s = "chat-1";
  // behind the same token as the rest of the API
  const anon = new Client({ name: "anon", version: "1.0.0" });
  await assert.rejects(anon.connect(new StreamableHTTPClientTransport(mcpURL(TOKEN_URL, u, s))), /unauthorized/);

  await rest("PUT", `/v1/users/${u}/blocks/persona`, { content: "You are terse.", writable: false });
  await rest("PUT", `/v1/users/${u}/blocks/memory`, { content: "likes tea", max_tokens: 10 });
  await rest("PUT", `/v1/users/${u}/sessions/${s}/blocks/task`, { content: "fix the sink", position: -1 });

  const client = await connect(mcpURL(TOKEN_URL, u, s));
  try {
    assert.equal(client.getServerVersion().name, "agentsidecar");
    assert.ok(client.getServerCapabilities().tools && client.getServerCapabilities().prompts && client.getServerCapabilities().resources);
    assert.match(client.getInstructions(), /set_context/);

    // tools/list: GET .../tools's definitions, the same JSON Schemas
    const { tools } = await client.listTools();
    const { tools: want } = await rest("GET", `/v1/users/${u}/sessions/${s}/tools?format=anthropic`);
    assert.deepEqual(
      tools.map((t) => [t.name, t.description, t.inputSchema]),
      want.map((t) => [t.name, t.description, t.input_schema]),
    );
    assert.deepEqual(tools.map((t) => t.name), ["set_context", "search_context", "session_search"]);
    assert.deepEqual(tools[0].inputSchema.properties.label.enum, ["task", "memory"], "only the writable blocks");

    // tools/call: POST .../tools/{name}'s result, written through REST's store
    const call = (name, args) => client.callTool({ name, arguments: args });
    let r = await call("set_context", { label: "memory", content: " and cake", action: "append" });
    assert.deepEqual(r.content, [{ type: "text", text: 'Appended to block "memory" (user block); it now holds 6/10 tokens.' }]);
    assert.equal(r.isError ?? false, false);
    assert.equal((await rest("GET", `/v1/users/${u}/blocks/memory`)).content, "likes tea and cake");
    for (const [args, says] of [
      [{ label: "persona", content: "be loud" }, "read-only"],
      [{ label: "memory", content: "tea ".repeat(40) }, "is full"],
      [{ label: "memory" }, 'needs "label"'],
    ]) {
      r = await call("set_context", args);
      assert.equal(r.isError, true, JSON.stringify(args));
      assert.match(r.content[0].text, new RegExp(says));
    }
    assert.equal((await rest("GET", `/v1/users/${u}/blocks/memory`)).content, "likes tea and cake", "refused calls wrote nothing");
    r = await call("search_context", { query: "cake" });
    assert.deepEqual(r.content, [{ type: "text", text: "[memory] likes tea and cake" }]);
    // an unknown tool: an MCP error, not a result
    await assert.rejects(call("load_context", {}), (e) => e.code === -32602 && /unknown tool/.test(e.message));

    // the system prompt: as a prompt and as a resource, GET .../system-prompt's bytes
    const prompt = await rest("GET", `/v1/users/${u}/sessions/${s}/system-prompt`);
    assert.match(prompt, /PERSONA \[readonly\]/);
    const { prompts } = await client.listPrompts();
    assert.deepEqual(prompts.map((p) => p.name), ["system_prompt"]);
    const got = await client.getPrompt({ name: "system_prompt" });
    assert.deepEqual(got.messages, [{ role: "user", content: { type: "text", text: prompt } }]);
    const { resources } = await client.listResources();
    const base = `agentsidecar://users/${u}/sessions/${s}/`;
    assert.deepEqual(resources.map((x) => x.uri), [base + "system-prompt", base + "blocks/task", base + "blocks/persona", base + "blocks/memory"]);
    const read = await client.readResource({ uri: base + "system-prompt" });
    assert.deepEqual(read.contents, [{ uri: base + "system-prompt", mimeType: "text/plain", text: prompt }]);
    const block = await client.readResource({ uri: base + "blocks/memory" });
    assert.deepEqual(JSON.parse(block.contents[0].text), await rest("GET", `/v1/users/${u}/sessions/${s}/blocks/memory`));
    await assert.rejects(client.readResource({ uri: base + "blocks/nope" }));
  } finally {
    await client.close();
  }

  // a user without blocks: no tool, and an empty prompt the client still reads
  const u2 = unique("ts-mcp-empty");
  const empty = await connect(mcpURL(TOKEN_URL, u2, s));
  try {
    assert.deepEqual((await empty.listTools()).tools, []);
    const { contents } = await empty.readResource({ uri: `agentsidecar://users/${u2}/sessions/${s}/system-prompt` });
    assert.equal(contents.length, 1);
    assert.equal(contents[0].text ?? contents[0].blob, "");
  } finally {
    await empty.close();
  }
});

test("malformed JSON-RPC: a JSON-RPC error, never a 5xx; bad ids: the envelope", { skip: absent }, async () => {
  const post = async (path, body) => {
    const r = await fetch(TOKEN_URL + path, { method: "POST", headers: { ...auth, "Content-Type": "application/json" }, body });
    return [r.status, await r.json()];
  };
  const p = `/v1/users/${unique("ts-mcp")}/sessions/s1/mcp`;
  for (const [body, code] of [
    ["{", -32700],
    ['{"hello":1}', -32600],
    ['{"jsonrpc":"2.0","id":1,"method":"tools/call"}', -32600],
    ['{"jsonrpc":"2.0","id":1,"method":"nope"}', -32601],
  ]) {
    const [status, answer] = await post(p, body);
    assert.equal(status, 400, body);
    assert.equal(answer.jsonrpc, "2.0", body);
    assert.equal(answer.error.code, code, body);
  }
  const [status, answer] = await post("/v1/users/a:b/sessions/s1/mcp", '{"jsonrpc":"2.0","id":1,"method":"ping"}');
  assert.equal(status, 400);
  assert.equal(answer.error.code, "invalid_id");
});

/** A scripted model: call i answers steps[i]; it keeps the tools it was given. */
class ScriptModel {
  constructor(steps) {
    this.steps = steps;
    this.calls = 0;
    this.tools = [];
  }
  async getResponse(request) {
    const { Usage } = await import("@openai/agents-core");
    this.tools.push(request.tools.map((t) => t.name));
    this.instructions = request.systemInstructions;
    return { usage: new Usage(), output: this.steps[this.calls++] ?? [] };
  }
  // eslint-disable-next-line require-yield
  async *getStreamedResponse() {
    throw new Error("this model is not streamed");
  }
}

test("an OpenAI Agents SDK agent with MCPServerStreamableHttp: its set_context seen through REST", { skip: absent }, async () => {
  const { Agent, MCPServerStreamableHttp, run, setTracingDisabled } = await import("@openai/agents-core");
  setTracingDisabled(true);
  const u = unique("ts-agent-mcp");
  const s = "chat-1";
  await rest("PUT", `/v1/users/${u}/blocks/persona`, { content: "You are terse.", writable: false });
  await rest("PUT", `/v1/users/${u}/sessions/${s}/blocks/human`, { content: "", description: "what you know of the user" });
  const server = new MCPServerStreamableHttp({ url: mcpURL(TOKEN_URL, u, s).href, name: "memory", requestInit: { headers: auth } });
  await server.connect();
  try {
    const model = new ScriptModel([
      [
        {
          type: "function_call",
          callId: "call_1",
          name: "set_context",
          arguments: JSON.stringify({ label: "human", content: "Prefers tea over coffee." }),
          status: "completed",
        },
      ],
      [{ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "Noted." }] }],
    ]);
    // the system prompt, read from the server at each turn (docs/mcp.md)
    const systemPrompt = `agentsidecar://users/${u}/sessions/${s}/system-prompt`;
    const instructions = async () => {
      const [c] = (await server.readResource(systemPrompt)).contents;
      return typeof c?.text === "string" ? c.text : "";
    };
    const agent = new Agent({ name: "assistant", instructions, model, mcpServers: [server] });
    const result = await run(agent, "I prefer tea over coffee.");
    assert.equal(result.finalOutput, "Noted.");
    // the second turn's instructions hold what the first turn's call wrote
    assert.match(model.instructions, /^═+\nPERSONA \[readonly\]\n═+\nYou are terse\.\n═+\nHUMAN \(what you know of the user\)\n═+\nPrefers tea over coffee\.$/);
    assert.deepEqual(model.tools[0], ["set_context", "search_context", "session_search"]);
    const output = result.newItems.find((i) => i.type === "tool_call_output_item");
    assert.match(JSON.stringify(output.output), /Replaced the content of block \\"human\\" \(session block\)/);
  } finally {
    await server.close();
  }
  const block = await rest("GET", `/v1/users/${u}/sessions/${s}/blocks/human`);
  assert.equal(block.content, "Prefers tea over coffee.");
  assert.match(await rest("GET", `/v1/users/${u}/sessions/${s}/system-prompt`), /HUMAN \(what you know of the user\)\n═+\nPrefers tea over coffee\./);
});

test("two sidecars on one Redis answer one MCP client in turn", { skip: absent }, async () => {
  const u = unique("ts-mcp-pods");
  const s = "chat-1";
  await rest("PUT", `/v1/users/${u}/sessions/${s}/blocks/notes`, { content: "" });
  const pods = [URL_, TOKEN_URL]; // the open one ignores the token
  const answered = [0, 0];
  let n = 0;
  const alternate = async (input, init) => {
    const i = n++ % 2;
    const url = new URL(input instanceof Request ? input.url : String(input));
    url.host = new URL(pods[i]).host;
    const r = await fetch(url, init);
    if (r.ok) answered[i]++;
    return r;
  };
  const client = await connect(mcpURL(pods[0], u, s), { fetch: alternate });
  try {
    for (const word of ["alpha", "beta", "gamma", "delta"]) {
      const w = await client.callTool({ name: "set_context", arguments: { label: "notes", content: `note ${word}` } });
      assert.equal(w.isError ?? false, false);
      const r = await client.callTool({ name: "search_context", arguments: { query: word } });
      assert.equal(r.content[0].text, `[notes] note ${word}`);
    }
  } finally {
    await client.close();
  }
  assert.ok(answered[0] >= 4 && answered[1] >= 4, `answers per pod: ${answered}`);
  assert.equal((await rest("GET", `/v1/users/${u}/sessions/${s}/blocks/notes`)).content, "note delta");
});

test("Google ADK's MCPToolset: the tools as declarations, a call, the resources", { skip: absent }, async () => {
  const { MCPToolset } = await import("@google/adk");
  const u = unique("ts-adk-mcp");
  const s = "chat-1";
  await rest("PUT", `/v1/users/${u}/sessions/${s}/blocks/human`, { content: "likes tea" });
  const toolset = new MCPToolset({
    type: "StreamableHTTPConnectionParams",
    url: mcpURL(TOKEN_URL, u, s).href,
    transportOptions: { requestInit: { headers: auth } },
  });
  try {
    const tools = await toolset.getTools();
    assert.deepEqual(tools.map((t) => t.name), ["set_context", "search_context", "session_search"]);
    const decl = tools[0]._getDeclaration();
    assert.equal(decl.name, "set_context");
    // a Runner passes a ToolContext; MCPTool.runAsync reads only its abortSignal
    const out = await tools[0].runAsync({ args: { label: "human", content: " and cake", action: "append" }, toolContext: { abortSignal: undefined } });
    assert.match(JSON.stringify(out), /Appended to block \\"human\\"/);
    assert.equal((await rest("GET", `/v1/users/${u}/sessions/${s}/blocks/human`)).content, "likes tea and cake");
    assert.deepEqual(await toolset.listResources(), ["system-prompt", "human"]);
  } finally {
    await toolset.close();
  }
});

test("LangGraph: MultiServerMCPClient's tools run by a ToolNode, the write seen through REST", { skip: absent }, async () => {
  const { MultiServerMCPClient } = await import("@langchain/mcp-adapters");
  const { ToolNode } = await import("@langchain/langgraph/prebuilt");
  const { AIMessage } = await import("@langchain/core/messages");
  const u = unique("ts-langgraph-mcp");
  const s = "chat-1";
  await rest("PUT", `/v1/users/${u}/blocks/persona`, { content: "You are terse.", writable: false });
  await rest("PUT", `/v1/users/${u}/sessions/${s}/blocks/human`, { content: "", description: "what you know of the user" });
  await rest("PUT", `/v1/users/${u}/sessions/${s}/blocks/notes`, { content: "", max_tokens: 5 });
  // docs/mcp.md's snippet, in JavaScript
  const client = new MultiServerMCPClient({ mcpServers: { memory: { transport: "http", url: mcpURL(TOKEN_URL, u, s).href, headers: auth } } });
  try {
    const tools = await client.getTools();
    assert.deepEqual(tools.map((t) => t.name), ["set_context", "search_context", "session_search"]);
    // the tool calls a model made, run by the graph's tool node
    const { messages } = await new ToolNode(tools).invoke({
      messages: [
        new AIMessage({
          content: "",
          tool_calls: [
            { id: "call_1", name: "set_context", args: { label: "human", content: "Prefers tea over coffee." } },
            { id: "call_2", name: "set_context", args: { label: "notes", content: "tea ".repeat(40) } },
          ],
        }),
      ],
    });
    assert.equal(messages.length, 2);
    const [ok, refused] = messages;
    assert.equal(ok.tool_call_id, "call_1");
    assert.notEqual(ok.status, "error");
    assert.match(JSON.stringify(ok.content), /Replaced the content of block \\"human\\" \(session block\)/);
    // isError: the model sees the refusal, nothing written
    assert.equal(refused.tool_call_id, "call_2");
    assert.equal(refused.status, "error");
    assert.match(JSON.stringify(refused.content), /is full/);
  } finally {
    await client.close();
  }
  assert.equal((await rest("GET", `/v1/users/${u}/sessions/${s}/blocks/human`)).content, "Prefers tea over coffee.");
  assert.equal((await rest("GET", `/v1/users/${u}/sessions/${s}/blocks/notes`)).content, "");
  assert.equal((await rest("GET", `/v1/users/${u}/blocks/persona`)).content, "You are terse.");
});
