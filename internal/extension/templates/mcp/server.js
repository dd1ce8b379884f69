// A minimal MCP server over stdio (newline-delimited JSON-RPC 2.0) with
// one tool, echo. It needs nothing but Node.js; a real server would use
// @modelcontextprotocol/sdk.
'use strict';
const readline = require('node:readline');

const tools = [
  {
    name: 'echo',
    description: 'Returns the text it is given.',
    inputSchema: {
      type: 'object',
      properties: { text: { type: 'string', description: 'The text to return.' } },
      required: ['text'],
    },
  },
];

function reply(id, result, error) {
  const msg = { jsonrpc: '2.0', id };
  if (error) msg.error = error;
  else msg.result = result;
  process.stdout.write(JSON.stringify(msg) + '\n');
}

function handle(req) {
  switch (req.method) {
    case 'initialize':
      return {
        protocolVersion: (req.params && req.params.protocolVersion) || '2025-06-18',
        capabilities: { tools: {} },
        serverInfo: { name: '{{name}}', version: '0.1.0' },
      };
    case 'ping':
      return {};
    case 'tools/list':
      return { tools };
    case 'tools/call': {
      const p = req.params || {};
      if (p.name !== 'echo') throw { code: -32602, message: 'unknown tool ' + p.name };
      const text = String((p.arguments && p.arguments.text) || '');
      return { content: [{ type: 'text', text }] };
    }
    default:
      throw { code: -32601, message: 'method not found: ' + req.method };
  }
}

readline.createInterface({ input: process.stdin }).on('line', (line) => {
  if (!line.trim()) return;
  let req;
  try {
    req = JSON.parse(line);
  } catch {
    reply(null, undefined, { code: -32700, message: 'parse error' });
    return;
  }
  if (req.id === undefined || req.id === null) return; // a notification
  try {
    reply(req.id, handle(req));
  } catch (e) {
    reply(req.id, undefined, { code: e.code || -32603, message: e.message || String(e) });
  }
});
