// Drives `gemkit mcp` with the TypeScript MCP SDK's client, for gemkit's
// tests and benchmarks. Usage:
//
//   node mcp-client.mjs stdio GEMKIT [ARGS...]   spawn GEMKIT ARGS (e.g. mcp --workspace W)
//   node mcp-client.mjs http URL                 connect to URL with $GEMKIT_MCP_TOKEN as bearer token
//
// It connects, prints "READY {serverInstructions}" on stdout, then reads one
// JSON request per line on stdin and prints one JSON answer per line:
//   {"op":"listTools"} {"op":"callTool","name":N,"args":{...}}
//   {"op":"listResources"} {"op":"readResource","uri":U}
//   {"op":"waitToolsChanged","after":K,"timeoutMs":T}  waits until more than K
//       notifications/tools/list_changed have arrived
//   {"op":"callToolCancel","name":N,"args":{...},"afterMs":T}  calls with a
//       progressToken, then cancels after T ms; answers the progress seen
//   {"op":"time","what":"listTools","n":N}   N sequential calls; answers the mean ms
//   {"op":"elicited"}   the elicitation requests the server sent so far
//   {"op":"close"}
// With $ELICIT set to accept, decline or cancel, the client offers form
// elicitation and answers every elicitation/create that way (with
// $ELICIT_CONTENT, JSON, as an accepted form's content; URL mode too with
// $ELICIT_URL), as a person
// would in a client's interface.
// Answers are {"ok":true,"result":...} or {"ok":false,"error":"..."}.
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const [mode, target, ...rest] = process.argv.slice(2);
let transport;
if (mode === 'stdio') {
  transport = new StdioClientTransport({ command: target, args: rest, env: process.env, stderr: 'inherit' });
} else if (mode === 'http') {
  transport = new StreamableHTTPClientTransport(new URL(target), {
    requestInit: { headers: { Authorization: `Bearer ${process.env.GEMKIT_MCP_TOKEN}` } },
  });
} else {
  process.stderr.write('usage: mcp-client.mjs stdio GEMKIT [ARGS...] | http URL\n');
  process.exit(2);
}

const elicit = process.env.ELICIT;
const client = new Client({ name: 'gemkit-interop', version: '1.0.0' },
  elicit ? { capabilities: { elicitation: { form: {}, ...(process.env.ELICIT_URL ? { url: {} } : {}) } } } : undefined);
const elicited = [];
if (elicit) {
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    elicited.push(req.params);
    return { action: elicit, ...(process.env.ELICIT_CONTENT ? { content: JSON.parse(process.env.ELICIT_CONTENT) } : {}) };
  });
}
let toolsChanged = 0;
const waiters = [];
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  toolsChanged++;
  for (const w of waiters.splice(0)) w();
});
await client.connect(transport);
process.stdout.write('READY ' + JSON.stringify({ instructions: client.getInstructions() ?? null }) + '\n');

async function handle(req) {
  switch (req.op) {
    case 'listTools':
      return (await client.listTools()).tools;
    case 'callTool':
      return await client.callTool({ name: req.name, arguments: req.args ?? {} });
    case 'callToolCancel': {
      const ac = new AbortController();
      setTimeout(() => ac.abort('cancelled by the test'), req.afterMs ?? 500);
      const progress = [];
      try {
        return await client.callTool({ name: req.name, arguments: req.args ?? {} }, undefined,
          { signal: ac.signal, onprogress: (p) => progress.push(p) });
      } catch (err) {
        return { cancelled: true, message: String(err?.message ?? err), progress };
      }
    }
    case 'listResources':
      return (await client.listResources()).resources;
    case 'readResource':
      return await client.readResource({ uri: req.uri });
    case 'waitToolsChanged': {
      const deadline = Date.now() + (req.timeoutMs ?? 30000);
      while (toolsChanged <= (req.after ?? 0)) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`no tools/list_changed after ${req.timeoutMs} ms (seen ${toolsChanged})`);
        await new Promise((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, left);
        });
      }
      return { count: toolsChanged };
    }
    case 'time': {
      const n = req.n ?? 100;
      const start = process.hrtime.bigint();
      for (let i = 0; i < n; i++) {
        if (req.what === 'listTools') await client.listTools();
        else await client.callTool({ name: req.name, arguments: req.args ?? {} });
      }
      return { meanMs: Number(process.hrtime.bigint() - start) / 1e6 / n };
    }
    case 'elicited':
      return elicited;
    case 'close':
      await client.close();
      process.exit(0);
    default:
      throw new Error('unknown op ' + req.op);
  }
}

const rl = createInterface({ input: process.stdin });
for await (const line of rl) {
  if (!line.trim()) continue;
  let answer;
  try {
    answer = { ok: true, result: await handle(JSON.parse(line)) };
  } catch (err) {
    answer = { ok: false, error: String(err?.message ?? err) };
  }
  process.stdout.write(JSON.stringify(answer) + '\n');
}
await client.close();
