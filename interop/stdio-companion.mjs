// A minimal IDE companion over MCP stdio, built with the TypeScript MCP SDK,
// for testing the stdio transport of gemkit's client (client). The real
// CLI reaches such a companion through a discovery file's `stdio` entry or
// GEMINI_CLI_IDE_SERVER_STDIO_COMMAND/_ARGS.
//
// It plays its own editor and person: after `notifications/initialized` it
// sends one ide/contextUpdate naming the file given with --file; a diff
// whose proposal contains "reject" is rejected after 20 ms, any other is
// accepted with " (edited)" appended; one containing "hold" waits for
// closeDiff. closeDiff answers {"content": ...}
// without a notification.
//
//   node interop/stdio-companion.mjs [--file PATH]

import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js');
const { StdioServerTransport } = require('@modelcontextprotocol/sdk/server/stdio.js');
const { z } = require('zod');

const args = process.argv.slice(2);
const file = args[0] === '--file' ? args[1] : '/nonexistent/file.txt';

const server = new McpServer({ name: 'stdio-test-companion', version: '0.0.1' });
const diffs = new Map();

function notify(method, params) {
  server.server.notification({ method, params }).catch((err) => process.stderr.write(`notify: ${err}\n`));
}

server.registerTool(
  'openDiff',
  { description: 'Open a diff view.', inputSchema: { filePath: z.string(), newContent: z.string() } },
  async ({ filePath, newContent }) => {
    diffs.set(filePath, newContent);
    if (newContent.includes('hold')) return { content: [] };
    setTimeout(() => {
      if (!diffs.has(filePath)) return;
      diffs.delete(filePath);
      if (newContent.includes('reject')) notify('ide/diffRejected', { filePath });
      else notify('ide/diffAccepted', { filePath, content: newContent + ' (edited)' });
    }, 20);
    return { content: [] };
  },
);

server.registerTool(
  'closeDiff',
  { description: 'Close a diff view.', inputSchema: { filePath: z.string(), suppressNotification: z.boolean().optional() } },
  async ({ filePath }) => {
    const content = diffs.has(filePath) ? diffs.get(filePath) : null;
    diffs.delete(filePath);
    return { content: [{ type: 'text', text: JSON.stringify({ content }) }] };
  },
);

server.server.oninitialized = () => {
  notify('ide/contextUpdate', {
    workspaceState: { openFiles: [{ path: file, timestamp: Date.now(), isActive: true, cursor: { line: 1, character: 1 } }], isTrusted: true },
  });
};

await server.connect(new StdioServerTransport());
