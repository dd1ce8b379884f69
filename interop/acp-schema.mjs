// The ACP v1 JSON schema that @agentclientprotocol/sdk ships
// (schema/v1/schema.json), as a checker of the messages an agent writes:
// each request's or notification's params, each answer's result against
// the definition the schema marks with that method (x-method) and side.
import { readFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";

const schema = JSON.parse(readFileSync(new URL("./node_modules/@agentclientprotocol/sdk/schema/v1/schema.json", import.meta.url), "utf8"));
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
ajv.addSchema(schema, "acp");

const defs = {};
for (const [name, d] of Object.entries(schema.$defs)) {
  if (!d["x-method"]) continue;
  const kind = name.endsWith("Response") ? "response" : name.endsWith("Notification") ? "notification" : "request";
  defs[`${kind}:${d["x-method"]}`] = name;
}
const validators = {};

// check is null when the schema accepts value as the kind ("request",
// "notification", "response") of method, else what it refuses.
export function check(kind, method, value) {
  const name = defs[`${kind}:${method}`];
  if (!name) return `no ${kind} ${method} in ACP v1`;
  validators[name] ??= ajv.getSchema(`acp#/$defs/${name}`);
  const v = validators[name];
  if (v(value ?? {})) return null;
  return `${name}: ${ajv.errorsText(v.errors)}`;
}

// The checker must refuse what the schema refuses, or it checks nothing.
if (check("response", "session/list", { sessions: [{ sessionId: 1 }] }) === null) {
  throw new Error("acp-schema: the check accepted a session/list answer without cwd");
}

// inspect checks one line the agent wrote, asked mapping the client's
// request ids to their methods: null when it is one JSON-RPC 2.0 message
// the schema accepts, else what is wrong.
export function inspect(line, asked) {
  let m;
  try {
    m = JSON.parse(line);
  } catch {
    return "not JSON";
  }
  if (m.jsonrpc !== "2.0") return "not JSON-RPC 2.0";
  if (m.method !== undefined) return check(m.id !== undefined ? "request" : "notification", m.method, m.params);
  if ("result" in m) {
    const method = asked.get(m.id);
    return method ? check("response", method, m.result) : `an answer to no request (id ${m.id})`;
  }
  if (!m.error || typeof m.error.code !== "number" || typeof m.error.message !== "string") {
    return "neither a request, a notification, a result nor an error";
  }
  return null;
}
