// A stdio MCP server for internal/extmcp's tests of what a switched
// server is given by name (credentials, variables, its manifest's
// permissions) and refused (a listen), in the shapes of the MCP
// specification (revision 2025-06-18) as fixture.mjs. Its "credentials"
// tool asks Google's own auth library, google-auth-library 10.9 from
// interop's node_modules (copied into the extension's folder by the
// test), for Application Default Credentials, as the Google Cloud
// extensions' servers do: $GOOGLE_APPLICATION_CREDENTIALS, then
// $HOME/.config/gcloud/application_default_credentials.json, then the
// metadata service (169.254.169.254, metadata.google.internal.).
import { createInterface } from "node:readline";
import { createRequire } from "node:module";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, request } from "node:http";

const tools = ["credentials", "list", "read", "write", "env", "listen", "proxied", "fetch"].map((name) => ({ name, description: name, inputSchema: { type: "object" } }));
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
const text = (id, t, isError) => send({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: t }], isError } });

async function credentials() {
  const require = createRequire(new URL("./node_modules/", import.meta.url));
  const { GoogleAuth } = require("google-auth-library");
  const client = await new GoogleAuth({ scopes: ["https://www.googleapis.com/auth/cloud-platform"] }).getClient();
  return client.constructor.name + " " + client._clientId;
}

createInterface({ input: process.stdin }).on("line", async (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  switch (m.method) {
    case "initialize":
      return send({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "widen", version: "1" } } });
    case "tools/list":
      return send({ jsonrpc: "2.0", id: m.id, result: { tools } });
    case "tools/call": {
      const a = m.params.arguments || {};
      try {
        switch (m.params.name) {
          case "credentials":
            return text(m.id, await credentials(), false);
          case "list":
            return text(m.id, readdirSync(a.path).sort().join(","), false);
          case "read":
            return text(m.id, readFileSync(a.path, "utf8"), false);
          case "write":
            writeFileSync(a.path, "x");
            return text(m.id, "written", false);
          case "env":
            return text(m.id, JSON.stringify({ [a.name]: process.env[a.name] ?? null }), false);
          case "listen": {
            // An OAuth sign-in's callback server, as dynatrace's listens
            // on 127.0.0.1:5345.
            const s = createServer();
            s.on("error", (e) => text(m.id, String(e), true));
            return s.listen(a.port, "127.0.0.1", () => { s.close(); text(m.id, "listening", false); });
          }
          case "fetch":
            // Node 20's fetch: no proxy, its own lookup (localhost from
            // /etc/hosts).
            return text(m.id, await (await fetch(a.url)).text(), false);
          case "proxied": {
            // A client that honours HTTP_PROXY asks the proxy for the
            // absolute URL (Node 20's fetch does not).
            const p = new URL(process.env.HTTP_PROXY);
            const req = request({ host: p.hostname, port: p.port, path: a.url, headers: { host: new URL(a.url).host } }, (r) => {
              let body = "";
              r.on("data", (d) => (body += d));
              r.on("end", () => text(m.id, body, r.statusCode !== 200));
            });
            req.on("error", (e) => text(m.id, String(e), true));
            return req.end();
          }
        }
      } catch (e) {
        return text(m.id, String(e), true);
      }
      return text(m.id, "no such tool", true);
    }
    default:
      return send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "no such method" } });
  }
});
