// A minimal stdio MCP server for internal/extmcp's tests of what a real
// server from npm will not do on request: exit in the middle of a call,
// never answer one. Its messages are the shapes of the MCP specification
// (revision 2025-06-18: lifecycle, tools/list, tools/call); the real
// servers of the tests (server-memory, server-filesystem,
// server-everything) show the protocol is spoken as clients expect.
import { createInterface } from "node:readline";
import { existsSync, mkdirSync, openSync, readFileSync, writeFileSync, writeSync, closeSync } from "node:fs";
import { join } from "node:path";
import { spawn, spawnSync } from "node:child_process";
import { request } from "node:http";

const tools = [
  { name: "ok", description: "Answers ok.", inputSchema: { type: "object" } },
  { name: "die", description: "Exits during the call.", inputSchema: { type: "object" } },
  { name: "hang", description: "Never answers.", inputSchema: { type: "object" } },
  { name: "read", description: "Reads a file.", inputSchema: { type: "object" } },
  { name: "write", description: "Writes a file.", inputSchema: { type: "object" } },
  { name: "fetch", description: "Fetches a URL.", inputSchema: { type: "object" } },
  { name: "flood", description: "Prints one message that never ends.", inputSchema: { type: "object" } },
  { name: "spam", description: "Sends many log notifications, then answers.", inputSchema: { type: "object" } },
  { name: "fork", description: "Starts a process in a session of its own that ignores SIGTERM.", inputSchema: { type: "object" } },
  { name: "tty", description: "Opens the controlling terminal.", inputSchema: { type: "object" } },
  { name: "proxied", description: "Gets an http URL through $HTTP_PROXY.", inputSchema: { type: "object" } },
  { name: "fill", description: "Appends mib MiB to a file, 1 MiB at a time.", inputSchema: { type: "object" } },
  { name: "run", description: "Runs a command and answers its output and status.", inputSchema: { type: "object" } },
  { name: "mkdirp", description: "Makes a folder of the working folder and those it needs (mkdirSync recursive): the path is the server's, not the call's.", inputSchema: { type: "object" } },
  { name: "create", description: "Creates a file of the working folder: the path is the server's, not the call's.", inputSchema: { type: "object" } },
  { name: "garble", description: "Prints the line it is given on its stdout, as it is, in place of an answer.", inputSchema: { type: "object" } },
  { name: "roots", description: "Asks the client for its roots (roots/list) during the call, and answers what it answered.", inputSchema: { type: "object" } },
  { name: "ask", description: "Asks the person the question of its arguments' params (elicitation/create, as given) during the call, and answers what the client answered.", inputSchema: { type: "object" } },
  { name: "caps", description: "Answers the capabilities the client declared in initialize, and what it answered a question asked at start (FIXTURE_ASK_AT_START).", inputSchema: { type: "object" } },
];
// What the client declared, and answered the question asked at start.
let declared = null;
let atStart = null;
// The listings that wait for the answer to the question asked at start:
// a client that lists before it calls has that question answered (or
// refused) before any call of its is under way.
const heldLists = [];
// The methods of the requests read so far, in order: a call of the
// unlisted tool "seen" answers them.
const seen = [];
// The answers the server waits for, to its own requests, by their ids.
const asked = new Map();
let asks = 0;
// FIXTURE_IGNORE_TERM makes the server itself ignore SIGTERM.
if (process.env.FIXTURE_IGNORE_TERM) process.on("SIGTERM", () => console.error("fixture: SIGTERM ignored"));
const text = (id, t, isError) => send({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: t }], isError } });
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
// FIXTURE_CAPS, a JSON object, is the capabilities its initialize
// answer declares (tools alone by default), and it then answers the
// optional methods of MCP (revision 2025-06-18: resources/list,
// resources/templates/list, resources/subscribe, prompts/list,
// completion/complete, logging/setLevel) with one entry each.
// FIXTURE_LACK names those it lacks as METHOD=HOW, comma-separated:
// HOW is "notfound" (-32601 Method not found, as the TypeScript SDK
// answers a method it has no handler for), "error" (an error of another
// code) or "silent" (no answer at all). Without FIXTURE_CAPS, they are
// answered as any method it does not know.
const caps = process.env.FIXTURE_CAPS ? JSON.parse(process.env.FIXTURE_CAPS) : { tools: {} };
const lacks = new Map((process.env.FIXTURE_LACK || "").split(",").filter(Boolean).map((l) => l.split("=")));
const optional = {
  "resources/list": () => ({ resources: [{ uri: "fixture://notes", name: "notes", mimeType: "text/plain" }] }),
  "resources/templates/list": () => ({ resourceTemplates: [{ uriTemplate: "fixture://notes/{id}", name: "note" }] }),
  "resources/subscribe": () => ({}),
  "prompts/list": () => ({ prompts: [{ name: "greet", description: "Greets.", arguments: [{ name: "who" }] }] }),
  "completion/complete": () => ({ completion: { values: ["world"] } }),
  "logging/setLevel": () => ({}),
};
// answerOptional answers m, a request of an optional method, as
// FIXTURE_LACK says; false when m is of no optional method.
const answerOptional = (m) => {
  if (!process.env.FIXTURE_CAPS || !(m.method in optional)) return false;
  switch (lacks.get(m.method)) {
    case "silent":
      return true;
    case "notfound":
      send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "Method not found" } });
      return true;
    case "error":
      send({ jsonrpc: "2.0", id: m.id, error: { code: -32603, message: "Internal error: " + m.method + " is broken" } });
      return true;
  }
  send({ jsonrpc: "2.0", id: m.id, result: optional[m.method]() });
  return true;
};
console.error("fixture started");
createInterface({ input: process.stdin }).on("line", (line) => {
  const m = JSON.parse(line);
  if (m.method === "notifications/initialized" && process.env.FIXTURE_ASK_AT_START) {
    // A question asked outside any call: FIXTURE_ASK_AT_START is its params.
    const id = "fixture-" + ++asks;
    asked.set(id, (a) => { atStart = a.result ?? a.error; heldLists.splice(0).forEach((f) => f()); });
    send({ jsonrpc: "2.0", id, method: "elicitation/create", params: JSON.parse(process.env.FIXTURE_ASK_AT_START) });
  }
  if (m.id === undefined) return;
  if (m.method !== undefined) seen.push(m.method);
  if (m.method === undefined) {
    // An answer to a request of the server's.
    const done = asked.get(m.id);
    asked.delete(m.id);
    if (done) done(m);
    return;
  }
  switch (m.method) {
    case "initialize":
      declared = m.params.capabilities;
      return send({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: caps, serverInfo: { name: "fixture", version: "1" } } });
    case "tools/list": {
      // FIXTURE_HOLD_LIST names a file: while it exists, the listing is
      // not answered (the other requests are), as a server slow to list;
      // "list-held" in its HOME (its data folder) tells that one waits.
      const answer = () => send({ jsonrpc: "2.0", id: m.id, result: { tools } });
      if (process.env.FIXTURE_ASK_AT_START && atStart === null) return void heldLists.push(answer);
      const hold = process.env.FIXTURE_HOLD_LIST;
      if (!hold || !existsSync(hold)) return answer();
      writeFileSync(join(process.env.HOME, "list-held"), "");
      const t = setInterval(() => { if (!existsSync(hold)) { clearInterval(t); answer(); } }, 20);
      return;
    }
    case "tools/call":
      if (m.params.name === "die") {
        console.error("fixture: asked to die");
        process.exit(7);
      }
      if (m.params.name === "hang") return;
      if (m.params.name === "seen") return text(m.id, seen.join(","), false);
      if (m.params.name === "roots") {
        const id = "fixture-" + ++asks;
        asked.set(id, (a) => text(m.id, JSON.stringify(a.result ?? a.error), a.error !== undefined));
        return send({ jsonrpc: "2.0", id, method: "roots/list" });
      }
      const a = m.params.arguments || {};
      if (m.params.name === "caps") return text(m.id, JSON.stringify({ declared, atStart }), false);
      if (m.params.name === "ask") {
        const id = "fixture-" + ++asks;
        asked.set(id, (r) => text(m.id, JSON.stringify(r.result ?? r.error), r.error !== undefined));
        return send({ jsonrpc: "2.0", id, method: "elicitation/create", params: a.params });
      }
      if (m.params.name === "garble") {
        process.stdout.write(a.line + "\n");
        return;
      }
      if (m.params.name === "flood") {
        // A notification whose text never ends: 32 MiB in 1 MiB writes.
        process.stdout.write('{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"');
        const chunk = "x".repeat(1 << 20);
        for (let i = 0; i < 32; i++) process.stdout.write(chunk);
        return;
      }
      if (m.params.name === "spam") {
        for (let i = 0; i < (a.count || 20000); i++) send({ jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "line " + i } });
        return text(m.id, "spammed", false);
      }
      if (m.params.name === "fork") {
        // $0 of the shell is a.marker, so that a test finds it by name.
        const c = spawn("setsid", ["sh", "-c", "trap '' TERM HUP INT; while :; do sleep 1; done", a.marker], { detached: true, stdio: "ignore" });
        c.unref();
        return text(m.id, "forked " + c.pid, false);
      }
      if (m.params.name === "tty") {
        try {
          openSync("/dev/tty", "r+");
          return text(m.id, "opened /dev/tty", false);
        } catch (e) {
          return text(m.id, String(e), true);
        }
      }
      if (m.params.name === "fill") {
        try {
          const fd = openSync(a.path, "a");
          const chunk = Buffer.alloc(1 << 20, 120);
          for (let i = 0; i < (a.mib || 1); i++) writeSync(fd, chunk);
          closeSync(fd);
          return text(m.id, "filled", false);
        } catch (e) {
          return text(m.id, String(e), true);
        }
      }
      if (m.params.name === "run") {
        const r = spawnSync(a.cmd, a.args || [], { encoding: "utf8" });
        return text(m.id, (r.stdout || "") + (r.stderr || "") + " status " + r.status + (r.error ? " " + r.error : ""), r.status !== 0);
      }
      try {
        if (m.params.name === "read") return text(m.id, readFileSync(a.path, "utf8"), false);
        if (m.params.name === "write") { writeFileSync(a.path, "x"); return text(m.id, "written", false); }
        // Node's own errors, as a server's code meets them: Node 20
        // reports a recursive mkdir refused by a read-only mount as
        // ENOENT, naming no path the call gave.
        if (m.params.name === "mkdirp") { mkdirSync(join(process.cwd(), a.rel || "reports/2026"), { recursive: true }); return text(m.id, "made", false); }
        if (m.params.name === "create") { writeFileSync(join(process.cwd(), a.rel || "report.txt"), "x"); return text(m.id, "created", false); }
      } catch (e) {
        return text(m.id, String(e), true);
      }
      if (m.params.name === "proxied") {
        // What a client that honours HTTP_PROXY does (Node 20's fetch
        // does not): ask the proxy for the absolute URL.
        if (!process.env.HTTP_PROXY) return text(m.id, "no HTTP_PROXY", true);
        const p = new URL(process.env.HTTP_PROXY);
        const req = request({ host: p.hostname, port: p.port, path: a.url, headers: { host: new URL(a.url).host } }, (r) => {
          let body = "";
          r.on("data", (d) => (body += d));
          r.on("end", () => text(m.id, body, r.statusCode !== 200));
        });
        req.on("error", (e) => text(m.id, String(e), true));
        return req.end();
      }
      if (m.params.name === "fetch") {
        return fetch(a.url).then((r) => r.text()).then((t) => text(m.id, t, false), (e) => text(m.id, String(e) + " " + String(e.cause), true));
      }
      return send({ jsonrpc: "2.0", id: m.id, result: { content: [{ type: "text", text: "ok" }] } });
    default:
      if (answerOptional(m)) return;
      return send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "no such method" } });
  }
});
