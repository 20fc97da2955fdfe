// What the suites share: the sidecar under test (from the environment the
// Go harness in clients/ sets), the served OpenAPI document, a recorder.
import { randomUUID } from "node:crypto";

export const URL_ = process.env.SIDECAR_URL ?? "";
export const OPS_URL = process.env.SIDECAR_OPS_URL ?? "";
export const TOKEN_URL = process.env.SIDECAR_TOKEN_URL ?? "";
export const TOKEN = process.env.SIDECAR_TOKEN ?? "";
export const skip = URL_ ? false : "SIDECAR_URL is not set: run these through `go test ./clients/`";

export const unique = (prefix) => `${prefix}-${randomUUID().slice(0, 12)}`;

let doc;
export async function document() {
  doc ??= await (await fetch(`${OPS_URL}/openapi.json`)).json();
  return doc;
}

/**
 * [operationId, METHOD, template] of every operation served that the
 * client has a method for (not the MCP route: MCP clients speak it).
 */
export async function operations() {
  const out = [];
  for (const [p, item] of Object.entries((await document()).paths)) {
    for (const [m, op] of Object.entries(item)) {
      if (["get", "put", "post", "patch", "delete"].includes(m) && op["x-client-method"] !== false) out.push([op.operationId, m.toUpperCase(), p]);
    }
  }
  return out;
}

export async function hasRoute(method, template) {
  return (await operations()).some(([, m, p]) => m === method && p === template);
}

export function templateRegex(template) {
  const esc = template.replace(/[.*+?^$()|[\]\\]/g, "\\$&");
  return new RegExp("^" + esc.replace(/\{[a-z_]+\}/g, "[^/]+") + "$");
}

/** A fetch that records [method, pathname, headers] of every request. */
export function recorder() {
  const sent = [];
  const f = (req) => {
    sent.push([req.method, new URL(req.url).pathname, req.headers]);
    return fetch(req);
  };
  return { sent, fetch: f };
}
