// stream-client.mjs connects to a gemkit companion's /stream endpoint with
// the MCP TypeScript SDK's WebSocket client transport and prints what it
// sees as JSON lines: the tools, the first context update, and the outcome
// of a diff it proposes. Node 20 needs --experimental-websocket.
//
// Usage: node --experimental-websocket stream-client.mjs PORT TOKEN FILE
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { WebSocketClientTransport } from '@modelcontextprotocol/sdk/client/websocket.js';

const [port, token, file] = process.argv.slice(2);

// The browser WebSocket API the transport uses cannot send headers; Node's
// WebSocket takes them in its options, so the bearer token goes there.
const Base = globalThis.WebSocket;
globalThis.WebSocket = class extends Base {
  constructor(url, protocols) {
    super(url, { protocols, headers: { Authorization: `Bearer ${token}` } });
  }
};

const out = (v) => process.stdout.write(JSON.stringify(v) + '\n');
const client = new Client({ name: 'gemkit-stream-test', version: '1.0.0' });
const seen = [];
let wake = () => {};
client.fallbackNotificationHandler = async (n) => {
  seen.push(n);
  wake();
};
const next = (method) => new Promise((resolve) => {
  const look = () => {
    const i = seen.findIndex((n) => n.method === method);
    if (i >= 0) return resolve(seen.splice(i, 1)[0]);
    wake = look;
  };
  look();
});

await client.connect(new WebSocketClientTransport(new URL(`ws://127.0.0.1:${port}/stream`)));
const tools = await client.listTools();
out({ tools: tools.tools.map((t) => t.name).sort() });
out({ context: (await next('ide/contextUpdate')).params });
const res = await client.callTool({ name: 'openDiff', arguments: { filePath: file, newContent: 'from the stream client\n' } });
out({ openDiff: res });
out({ outcome: await next('ide/diffAccepted') });
await client.close();
