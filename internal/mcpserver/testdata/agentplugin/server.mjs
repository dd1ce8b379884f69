#!/usr/bin/env node
// The stdio MCP server of the Agent Plugins 1.0 plugins of
// internal/mcpserver's tests (agentplugins_*_test.go): "hello" answers a
// greeting, "probe" what it was started with (its arguments, working
// folder and environment) and whether it could write a file in
// PLUGIN_DATA; with PROBE_TOOL set, its one tool is "probe" under that
// name, so that the servers of one plugin tell their tools apart. Its
// messages are the shapes of the MCP specification
// (revision 2025-06-18: lifecycle, tools/list, tools/call).
import { createInterface } from "node:readline";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const probeName = process.env.PROBE_TOOL || "probe";
const tools = [{ name: probeName, description: "Answers how the server was started.", inputSchema: { type: "object" } }];
if (!process.env.PROBE_TOOL) {
  tools.push({ name: "hello", description: "Greets someone from the hello plugin.", inputSchema: { type: "object", properties: { who: { type: "string" } } } });
}
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
const text = (id, t) => send({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: t }] } });

function probe() {
  let wrote = "";
  try {
    writeFileSync(join(process.env.PLUGIN_DATA, "probe.txt"), "written by the plugin's server\n");
    wrote = "yes";
  } catch (e) {
    wrote = String(e);
  }
  return JSON.stringify({ argv: process.argv.slice(2), cwd: process.cwd(), env: process.env, wroteData: wrote });
}

createInterface({ input: process.stdin }).on("line", (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  switch (m.method) {
    case "initialize":
      return send({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "agentplugin-probe", version: "1.0.0" } } });
    case "ping":
      return send({ jsonrpc: "2.0", id: m.id, result: {} });
    case "tools/list":
      return send({ jsonrpc: "2.0", id: m.id, result: { tools } });
    case "tools/call":
      if (m.params.name === "hello") return text(m.id, `hello-plugin-7741 greets ${m.params.arguments?.who ?? "you"}`);
      if (m.params.name === probeName) return text(m.id, probe());
  }
  send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "Method not found" } });
});
