// An ACP client built with @agentclientprotocol/sdk that drives an agent
// through sessions across restarts: each run starts the agent afresh,
// initializes it and takes its steps; every message the agent writes is
// checked against the protocol's v1 JSON schema (the one the SDK ships,
// schema/v1/schema.json) and what happened is printed as JSON on stdout.
//
// Usage: node acp-sessions.mjs PLAN.json
//
// The plan: {command, args, env, cwd, timeoutMs, clientCapabilities,
//   runs: [[{op, ...}, ...], ...]}
// Steps (op): "new"; "prompt" {text}; "list" {cwd, cursor, all};
// "load" / "resume" / "close" / "delete" {sessionId}; "set_config_option"
// {configId, value}; "set_mode" {modeId}; "logout". A step's sessionId
// defaults to the last session "new" created, in any run. Permission
// requests are answered allow_once, and their titles noted (asked).
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { client, ndJsonStream } from "@agentclientprotocol/sdk";
import { inspect as inspectLine } from "./acp-schema.mjs";

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = { runs: [], checked: 0, invalid: [], notProtocol: [] };
let lastSession;

async function run(steps) {
  const rec = { steps: [], stderr: "" };
  out.runs.push(rec);
  const child = spawn(plan.command, plan.args ?? [], {
    cwd: plan.cwd, env: { ...process.env, ...(plan.env ?? {}) }, stdio: ["pipe", "pipe", "pipe"], detached: true,
  });
  child.stderr.on("data", (c) => (rec.stderr += c.toString("utf8")));
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  // What the client asked, by id, so that an answer is checked against
  // the schema's response to that method.
  const asked = new Map();
  let pending = "";
  const input = new ReadableStream({
    start(controller) {
      child.stdout.on("data", (chunk) => {
        pending += chunk.toString("utf8");
        let i;
        while ((i = pending.indexOf("\n")) >= 0) {
          const line = pending.slice(0, i);
          pending = pending.slice(i + 1);
          inspect(line, asked);
        }
        controller.enqueue(new Uint8Array(chunk));
      });
      child.stdout.on("end", () => controller.close());
    },
  });
  const output = new WritableStream({
    write(chunk) {
      for (const line of new TextDecoder().decode(chunk).split("\n")) {
        if (!line) continue;
        try {
          const m = JSON.parse(line);
          if (m.method && m.id !== undefined) asked.set(m.id, m.method);
        } catch {}
      }
      return new Promise((resolve, reject) => child.stdin.write(chunk, (err) => (err ? reject(err) : resolve())));
    },
  });
  let updates = [];
  let asks = [];
  const app = client({ name: "gemkit-sessions-test" })
    .onRequest("session/request_permission", ({ params }) => {
      asks.push(params.toolCall.title);
      const opt = params.options.find((o) => o.kind === "allow_once") ?? params.options[0];
      return { outcome: { outcome: "selected", optionId: opt.optionId } };
    })
    .onNotification("session/update", ({ params }) => {
      updates.push(params.update);
    });
  const conn = app.connect(ndJsonStream(output, input));
  const errOf = (e) => ({ code: e.code, message: e.message, data: e.data });
  try {
    rec.init = await conn.agent.request("initialize", {
      protocolVersion: 1,
      clientCapabilities: plan.clientCapabilities ?? { fs: { readTextFile: false, writeTextFile: false } },
      clientInfo: { name: "gemkit-sessions-test", version: "1.0.0" },
    });
    for (const s of steps) {
      updates = [];
      asks = [];
      const step = { op: s.op };
      const sessionId = s.sessionId ?? lastSession;
      const t0 = performance.now();
      try {
        step.result = await request(conn, s, sessionId);
        if (s.op === "new") lastSession = step.result.sessionId;
      } catch (e) {
        step.error = errOf(e);
      }
      step.ms = performance.now() - t0;
      // Notifications sent before an answer arrive before it.
      step.updates = updates;
      step.asked = asks;
      rec.steps.push(step);
    }
  } catch (e) {
    rec.error = errOf(e);
  }
  child.stdin.end();
  const timer = setTimeout(() => {
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {}
  }, 10000);
  rec.exit = await exited;
  clearTimeout(timer);
}

function request(conn, s, sessionId) {
  const cwd = s.cwd ?? plan.cwd;
  switch (s.op) {
    case "new":
      return conn.agent.request("session/new", { cwd, mcpServers: [] });
    case "prompt":
      return conn.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: s.text }] });
    case "list": {
      const p = {};
      if (!s.all) p.cwd = cwd;
      if (s.cursor) p.cursor = s.cursor;
      return conn.agent.request("session/list", p);
    }
    case "load":
      return conn.agent.request("session/load", { sessionId, cwd, mcpServers: [] });
    case "resume":
      return conn.agent.request("session/resume", { sessionId, cwd, mcpServers: [] });
    case "close":
      return conn.agent.request("session/close", { sessionId });
    case "delete":
      return conn.agent.request("session/delete", { sessionId });
    case "set_config_option":
      return conn.agent.request("session/set_config_option", { sessionId, configId: s.configId, value: s.value });
    case "set_mode":
      return conn.agent.request("session/set_mode", { sessionId, modeId: s.modeId });
    case "logout":
      return conn.agent.request("logout", {});
  }
  throw new Error(`unknown step ${s.op}`);
}

// inspect checks one line the agent wrote against the v1 schema.
function inspect(line, asked) {
  out.checked++;
  const problem = inspectLine(line, asked);
  if (problem === "not JSON" || problem === "not JSON-RPC 2.0") out.notProtocol.push(line);
  else if (problem) out.invalid.push({ problem, line: line.slice(0, 2000) });
}

setTimeout(() => {
  out.error = { message: "acp-sessions: the plan did not finish in time" };
  process.stdout.write(JSON.stringify(out) + "\n");
  process.exit(0);
}, plan.timeoutMs ?? 120000).unref();

for (const steps of plan.runs) await run(steps);
process.stdout.write(JSON.stringify(out) + "\n");
process.exit(0);
