// An ACP client built with @agentclientprotocol/sdk (the protocol's
// TypeScript library, pinned in package.json) that drives an agent through
// one scenario and prints what happened as JSON on stdout. The Go tests
// run it against `gemkit acp` and against the real `gemini --acp`.
//
// Usage: node acp-client.mjs PLAN.json
//
// The plan: {command, args, env, cwd,
//   fs: {read, write, missing: "error"|"empty", buffers: {ABS: TEXT}},
//   permissions: ["allow_once"|"allow_always"|"reject_once"|"ignore", ...],
//   elicitation: {capabilities: {form: {}}, answers: [{action, content} | {ignore: true}, ...]},
//   mcpServers: [...],
//   prompts: [{blocks: [...], cancelAfterMs}]}
// A permission request takes the next answer in order (an option of that
// kind; "ignore" never answers); with elicitation, the client declares
// its capabilities and an elicitation/create takes the next answer. fs/write_text_file writes the disk, as an
// editor saving the buffer would.
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { client, ndJsonStream, RequestError } from "@agentclientprotocol/sdk";

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = { requests: [], updates: [], prompts: [], stdoutLines: 0, notProtocol: [] };

const child = spawn(plan.command, plan.args ?? [], {
  cwd: plan.cwd, env: { ...process.env, ...(plan.env ?? {}) }, stdio: ["pipe", "pipe", "pipe"],
  // Its own process group, so that whatever it starts (Gemini CLI
  // relaunches itself in a child) can be ended with it.
  detached: true,
});
child.stderr.pipe(process.stderr);
const killGroup = () => {
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {}
};
const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));

// Every byte the agent writes on stdout is checked: each line must be one
// JSON-RPC 2.0 message.
let pending = "";
const input = new ReadableStream({
  start(controller) {
    child.stdout.on("data", (chunk) => {
      pending += chunk.toString("utf8");
      let i;
      while ((i = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, i);
        pending = pending.slice(i + 1);
        out.stdoutLines++;
        try {
          if (JSON.parse(line).jsonrpc !== "2.0") out.notProtocol.push(line);
        } catch {
          out.notProtocol.push(line);
        }
      }
      controller.enqueue(new Uint8Array(chunk));
    });
    child.stdout.on("end", () => {
      if (pending !== "") out.notProtocol.push(pending);
      controller.close();
    });
  },
});
const output = new WritableStream({
  write(chunk) {
    return new Promise((resolve, reject) => child.stdin.write(chunk, (err) => (err ? reject(err) : resolve())));
  },
});

// A scenario that hangs prints what it has so far and ends.
setTimeout(() => {
  out.error = { message: "acp-client: the scenario did not finish in time" };
  killGroup();
  process.stdout.write(JSON.stringify(out) + "\n");
  process.exit(0);
}, plan.timeoutMs ?? 120000).unref();

const answers = [...(plan.permissions ?? [])];
const elicitAnswers = [...(plan.elicitation?.answers ?? [])];
const fsPlan = plan.fs ?? {};
const buffers = fsPlan.buffers ?? {};

const app = client({ name: "gemkit-acp-test" })
  .onRequest("session/request_permission", ({ params }) => {
    out.requests.push({ method: "session/request_permission", params });
    const want = answers.shift() ?? "reject_once";
    if (want === "ignore") return new Promise(() => {});
    const opt = params.options.find((o) => o.kind === want) ?? params.options.find((o) => o.kind.startsWith("reject"));
    return { outcome: { outcome: "selected", optionId: opt.optionId } };
  })
  .onRequest("elicitation/create", ({ params }) => {
    out.requests.push({ method: "elicitation/create", params });
    const a = elicitAnswers.shift() ?? { action: "decline" };
    return a.ignore ? new Promise(() => {}) : a;
  })
  .onRequest("fs/read_text_file", ({ params }) => {
    out.requests.push({ method: "fs/read_text_file", params });
    if (params.path in buffers) return { content: buffers[params.path] };
    try {
      return { content: readFileSync(params.path, "utf8") };
    } catch (e) {
      if (e.code !== "ENOENT") throw e;
      if (fsPlan.missing === "empty") return { content: "" };
      throw RequestError.resourceNotFound(params.path);
    }
  })
  .onRequest("fs/write_text_file", ({ params }) => {
    out.requests.push({ method: "fs/write_text_file", params });
    mkdirSync(dirname(params.path), { recursive: true });
    writeFileSync(params.path, params.content);
    return {};
  })
  .onNotification("session/update", ({ params }) => {
    out.updates.push(params.update);
  });

const conn = app.connect(ndJsonStream(output, input));
const errOf = (e) => ({ code: e.code, message: e.message, data: e.data });
try {
  const t0 = performance.now();
  out.init = await conn.agent.request("initialize", {
    protocolVersion: plan.protocolVersion ?? 1,
    clientCapabilities: { fs: { readTextFile: !!fsPlan.read, writeTextFile: !!fsPlan.write },
      ...(plan.elicitation ? { elicitation: plan.elicitation.capabilities } : {}) },
    clientInfo: { name: "gemkit-acp-test", version: "1.0.0" },
  });
  out.initMs = performance.now() - t0;
  try {
    out.session = await conn.agent.request("session/new", { cwd: plan.cwd, mcpServers: plan.mcpServers ?? [] });
  } catch (e) {
    out.sessionError = errOf(e);
  }
  for (const p of out.session ? plan.prompts ?? [] : []) {
    const start = performance.now();
    let cancelledAt;
    if (p.cancelAfterMs !== undefined) {
      setTimeout(() => {
        cancelledAt = performance.now();
        conn.agent.notify("session/cancel", { sessionId: out.session.sessionId });
      }, p.cancelAfterMs);
    }
    try {
      const r = await conn.agent.request("session/prompt", { sessionId: out.session.sessionId, prompt: p.blocks });
      out.prompts.push({ stopReason: r.stopReason, ms: performance.now() - start,
        afterCancelMs: cancelledAt === undefined ? undefined : performance.now() - cancelledAt });
    } catch (e) {
      out.prompts.push({ error: errOf(e), ms: performance.now() - start });
    }
  }
} catch (e) {
  out.error = errOf(e);
}
child.stdin.end();
const timer = setTimeout(killGroup, 10000);
out.exit = await exited;
clearTimeout(timer);
// What the agent left behind goes with it.
killGroup();
process.stdout.write(JSON.stringify(out) + "\n");
process.exit(0);
