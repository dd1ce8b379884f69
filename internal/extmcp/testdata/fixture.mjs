// A minimal stdio MCP server for internal/extmcp's tests of what a real
// server from npm will not do on request: exit in the middle of a call,
// never answer one. Its messages are the shapes of the MCP specification
// (revision 2025-06-18: lifecycle, tools/list, tools/call); the real
// servers of the tests (server-memory, server-filesystem,
// server-everything) show the protocol is spoken as clients expect.
import { createInterface } from "node:readline";

const tools = [
  { name: "ok", description: "Answers ok.", inputSchema: { type: "object" } },
  { name: "die", description: "Exits during the call.", inputSchema: { type: "object" } },
  { name: "hang", description: "Never answers.", inputSchema: { type: "object" } },
];
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
console.error("fixture started");
createInterface({ input: process.stdin }).on("line", (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  switch (m.method) {
    case "initialize":
      return send({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "fixture", version: "1" } } });
    case "tools/list":
      return send({ jsonrpc: "2.0", id: m.id, result: { tools } });
    case "tools/call":
      if (m.params.name === "die") {
        console.error("fixture: asked to die");
        process.exit(7);
      }
      if (m.params.name === "hang") return;
      return send({ jsonrpc: "2.0", id: m.id, result: { content: [{ type: "text", text: "ok" }] } });
    default:
      return send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "no such method" } });
  }
});
