// Drives `gemkit mcp` with the TypeScript SDK v2 client
// (@modelcontextprotocol/client), pinned to protocol 2026-07-28: it connects
// with server/discover (no initialize), then lists the tools, calls one with
// JSON output, lists and reads the resources, and prints one JSON object with
// what it got. Usage:
//
//   node mcp-client-v2.mjs stdio GEMKIT [ARGS...]   spawn GEMKIT ARGS
//   node mcp-client-v2.mjs http URL                 with $GEMKIT_MCP_TOKEN as bearer token
//
// $CALL names the tool to call and $CALL_ARGS its arguments (JSON); with
// $SLOW, the tool $SLOW is also called with a progress handler and
// cancelled after $SLOW_MS ms, and the progress notifications are printed.
// With $ELICIT set to accept, decline or cancel, the client offers form
// elicitation and answers each question of an input_required result that
// way (as a person would in a client's interface), with $ELICIT_CONTENT
// (JSON) as an accepted form's content; the questions are
// printed, and with $CALL_AGAIN the tool is called a second time.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const [mode, target, ...rest] = process.argv.slice(2);
let transport;
if (mode === 'stdio') {
  transport = new StdioClientTransport({ command: target, args: rest, env: process.env, stderr: 'inherit' });
} else if (mode === 'http') {
  transport = new StreamableHTTPClientTransport(new URL(target), {
    requestInit: { headers: { Authorization: `Bearer ${process.env.GEMKIT_MCP_TOKEN}` } },
  });
} else {
  process.stderr.write('usage: mcp-client-v2.mjs stdio GEMKIT [ARGS...] | http URL\n');
  process.exit(2);
}

const elicit = process.env.ELICIT;
const client = new Client({ name: 'gemkit-interop-v2', version: '1.0.0' }, {
  versionNegotiation: { mode: { pin: '2026-07-28' } },
  ...(elicit ? { capabilities: { elicitation: { form: {} } }, inputRequired: { autoFulfill: true } } : {}),
});
const elicited = [];
if (elicit) {
  client.setRequestHandler('elicitation/create', async (req) => {
    elicited.push(req.params);
    return { action: elicit, ...(process.env.ELICIT_CONTENT ? { content: JSON.parse(process.env.ELICIT_CONTENT) } : {}) };
  });
}
await client.connect(transport);
const out = {
  era: client.getProtocolEra(),
  version: client.getNegotiatedProtocolVersion(),
  instructions: client.getInstructions() ?? null,
};
out.tools = (await client.listTools()).tools;
out.call = await client.callTool({ name: process.env.CALL, arguments: JSON.parse(process.env.CALL_ARGS ?? '{}') });
if (process.env.CALL_AGAIN) out.again = await client.callTool({ name: process.env.CALL, arguments: JSON.parse(process.env.CALL_ARGS ?? '{}') });
if (elicit) out.elicited = elicited;
out.resources = (await client.listResources()).resources;
if (out.resources.length > 0) out.read = await client.readResource({ uri: out.resources[0].uri });
if (process.env.SLOW) {
  out.progress = [];
  try {
    await client.callTool({ name: process.env.SLOW, arguments: {} },
      { onprogress: (p) => out.progress.push(p), signal: AbortSignal.timeout(Number(process.env.SLOW_MS ?? 2000)) });
  } catch (err) {
    out.cancelled = String(err?.message ?? err);
  }
}
process.stdout.write(JSON.stringify(out) + '\n');
await client.close();
