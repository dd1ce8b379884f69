// A reference IDE companion built the way the official VS Code companion is
// built (Node, express, the TypeScript MCP SDK), driven by gemkit's stdio
// editor protocol so that one harness can drive it and gemkit the same way.
//
// It exists to be measured against (bench/companion), not to be shipped. It
// is written from the documented behaviour (see
// /work/shared/spec/real-client-behaviour.md), not from the official source.
//
// Dependencies resolve from interop/node_modules through createRequire, so
// it runs from any directory once `npm install --no-save` has run in interop/:
//
//   node bench/reference/companion.mjs --editor stdio --workspace DIR [--ide-pid N] [--debounce 1ms]
//
// --debounce (default 50ms; a number with ms or s, more than 0 and at most
// 10s) is the same benchmarking knob as gemkit's hidden flag of that name.
//
// stdin/stdout carry newline-delimited JSON-RPC 2.0 with the editor.

import { createRequire } from 'node:module';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';

const require = createRequire(new URL('../../interop/package.json', import.meta.url));
const express = require('express');
const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js');
const { StreamableHTTPServerTransport } = require('@modelcontextprotocol/sdk/server/streamableHttp.js');
const { isInitializeRequest } = require('@modelcontextprotocol/sdk/types.js');
const { z } = require('zod');

const MAX_FILES = 10;
const MAX_SELECTED_TEXT = 16384;
const DEFAULT_DEBOUNCE_MS = 50;
const MAX_DEBOUNCE_MS = 10_000;
const PING_MS = 60_000;
const EDITOR_TIMEOUT_MS = 10_000;

// ---- flags ----
function parseArgs(argv) {
  const opts = {
    workspaces: [],
    idePid: process.ppid,
    ideName: 'reference',
    ideDisplayName: 'Reference companion',
    debounceMs: DEFAULT_DEBOUNCE_MS,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => argv[++i];
    if (a === '--editor') next();
    else if (a === '--workspace') opts.workspaces.push(path.resolve(next()));
    else if (a === '--ide-pid') opts.idePid = Number(next());
    else if (a === '--ide-name') opts.ideName = next();
    else if (a === '--ide-display-name') opts.ideDisplayName = next();
    else if (a === '--debounce') opts.debounceMs = parseDebounce(next());
    else throw new Error(`unknown flag ${a}`);
  }
  if (opts.workspaces.length === 0) opts.workspaces.push(process.cwd());
  return opts;
}

// parseDebounce reads "1ms", "0.5ms", "2s": more than 0 and at most 10 s,
// like gemkit's --debounce. Node's timers fire no sooner than 1 ms, so
// anything shorter acts as 1 ms.
function parseDebounce(v) {
  const m = /^(\d+(?:\.\d+)?)(ms|s)$/.exec(v ?? '');
  const ms = m ? Number(m[1]) * (m[2] === 's' ? 1000 : 1) : NaN;
  if (!(ms > 0 && ms <= MAX_DEBOUNCE_MS)) {
    process.stderr.write(`reference: --debounce must be a duration in ms or s, more than 0 and at most 10s (default 50ms), not ${JSON.stringify(v ?? '')}\n`);
    process.exit(2);
  }
  return ms;
}

const opts = parseArgs(process.argv.slice(2));
let workspaces = opts.workspaces;
let trusted = true;

// ---- the editor, over stdio ----
let nextEditorId = 1;
const editorCalls = new Map();

function toEditor(msg) {
  process.stdout.write(JSON.stringify(msg) + '\n');
}

function editorRequest(method, params) {
  const id = nextEditorId++;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      editorCalls.delete(id);
      reject(new Error(`the editor did not answer ${method} in time`));
    }, EDITOR_TIMEOUT_MS);
    editorCalls.set(id, { resolve, reject, timer });
    toEditor({ jsonrpc: '2.0', id, method, params });
  });
}

// ---- open diffs: only a diff still open is resolved by the editor ----
const openDiffs = new Set();

// ---- open files, as the official companion keeps them ----
let openFiles = [];
let debounce = null;

function cut(text) {
  if (typeof text !== 'string' || text === '') return undefined;
  return text.length > MAX_SELECTED_TEXT ? text.slice(0, MAX_SELECTED_TEXT) : text;
}

// Only files on disk enter the context, as only file-scheme documents do in
// the official companion; gemkit checks the same way, so both do the work.
function onDisk(p) {
  if (typeof p !== 'string' || !path.isAbsolute(p)) return false;
  try {
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

function focus(p, cursor, selectedText) {
  if (!onDisk(p)) return;
  const prev = openFiles.find((f) => f.isActive);
  if (prev) {
    prev.isActive = false;
    delete prev.cursor;
    delete prev.selectedText;
  }
  openFiles = openFiles.filter((f) => f.path !== p);
  const file = { path: p, timestamp: Date.now(), isActive: true };
  if (cursor) file.cursor = { line: cursor.line, character: cursor.character };
  const sel = cut(selectedText);
  if (sel !== undefined) file.selectedText = sel;
  openFiles.unshift(file);
  if (openFiles.length > MAX_FILES) openFiles.length = MAX_FILES;
  changed();
}

function selection(p, cursor, selectedText) {
  const active = openFiles.find((f) => f.isActive);
  if (!active || active.path !== p) return focus(p, cursor, selectedText);
  active.cursor = { line: cursor.line, character: cursor.character };
  const sel = cut(selectedText);
  if (sel === undefined) delete active.selectedText;
  else active.selectedText = sel;
  changed();
}

function remove(p) {
  openFiles = openFiles.filter((f) => f.path !== p);
  changed();
}

function rename(oldPath, newPath) {
  for (const f of openFiles) if (f.path === oldPath) f.path = newPath;
  changed();
}

function changed() {
  if (debounce) clearTimeout(debounce);
  debounce = setTimeout(() => {
    debounce = null;
    broadcast('ide/contextUpdate', contextParams());
  }, opts.debounceMs);
}

function contextParams() {
  return { workspaceState: { openFiles: openFiles.map((f) => ({ ...f })), isTrusted: trusted } };
}

// ---- MCP sessions ----
const sessions = new Map(); // session id -> { transport, server, gotContext, missedPings }

function broadcast(method, params) {
  for (const s of sessions.values()) send(s, method, params);
}

function send(s, method, params) {
  s.transport.send({ jsonrpc: '2.0', method, params }).catch((err) => {
    console.error(`reference: send ${method}: ${err.message}`);
  });
}

function newMcpServer() {
  const server = new McpServer({ name: 'gemini-cli-companion-mcp-server', version: '0.0.1' }, { capabilities: { logging: {} } });
  server.registerTool(
    'openDiff',
    {
      description: '(IDE Tool) Open a diff view to create or modify a file.',
      inputSchema: { filePath: z.string(), newContent: z.string() },
    },
    async ({ filePath, newContent }) => {
      openDiffs.add(filePath);
      try {
        await editorRequest('diff/open', { filePath, newContent });
        return { content: [] };
      } catch (err) {
        openDiffs.delete(filePath);
        return { content: [{ type: 'text', text: `Failed to open diff: ${err.message}` }], isError: true };
      }
    },
  );
  server.registerTool(
    'closeDiff',
    {
      description: '(IDE Tool) Close an open diff view for a specific file.',
      inputSchema: { filePath: z.string(), suppressNotification: z.boolean().optional() },
    },
    async ({ filePath }) => {
      // Closed by the CLI: whatever the editor reports for it now is not
      // forwarded.
      openDiffs.delete(filePath);
      try {
        const res = await editorRequest('diff/close', { filePath });
        const content = res && typeof res.content === 'string' ? res.content : undefined; // {} when none, as the official one answers
        return { content: [{ type: 'text', text: JSON.stringify({ content }) }] };
      } catch (err) {
        return { content: [{ type: 'text', text: `Failed to close diff: ${err.message}` }], isError: true };
      }
    },
  );
  return server;
}

// ---- HTTP ----
const authToken = randomUUID();
const app = express();
let port = 0;

app.use((req, res, next) => {
  if (req.headers.origin !== undefined) return res.status(403).json({ error: 'Request denied by CORS policy.' });
  const host = req.headers.host;
  if (host !== `localhost:${port}` && host !== `127.0.0.1:${port}`) return res.status(403).json({ error: 'Invalid Host header' });
  if (req.headers.authorization !== `Bearer ${authToken}`) return res.status(401).send('Unauthorized');
  next();
});
app.use(express.json({ limit: '10mb' }));

function badRequest(res, message) {
  res.status(400).json({ jsonrpc: '2.0', error: { code: -32000, message }, id: null });
}

app.post('/mcp', async (req, res) => {
  const id = req.headers['mcp-session-id'];
  let s = id ? sessions.get(id) : undefined;
  if (!s) {
    if (id || !isInitializeRequest(req.body)) return badRequest(res, 'Bad Request: No valid session ID provided');
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sid) => sessions.set(sid, s),
    });
    const server = newMcpServer();
    s = { transport, server, gotContext: false, missedPings: 0 };
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
  }
  try {
    await s.transport.handleRequest(req, res, req.body);
  } catch (err) {
    console.error(`reference: POST /mcp: ${err.message}`);
    if (!res.headersSent) res.status(500).json({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal error' }, id: null });
  }
});

app.get('/mcp', async (req, res) => {
  const s = sessions.get(req.headers['mcp-session-id']);
  if (!s) return badRequest(res, 'Invalid or missing session ID');
  await s.transport.handleRequest(req, res);
  if (!s.gotContext) {
    s.gotContext = true;
    send(s, 'ide/contextUpdate', contextParams());
  }
});

// ---- discovery ----
let discoveryFile = '';

function writeDiscovery() {
  const dir = path.join(os.tmpdir(), 'gemini', 'ide');
  fs.mkdirSync(dir, { recursive: true });
  discoveryFile = path.join(dir, `gemini-ide-server-${opts.idePid}-${port}.json`);
  const body = {
    port,
    workspacePath: workspaces.join(path.delimiter),
    authToken,
    ideInfo: { name: opts.ideName, displayName: opts.ideDisplayName },
  };
  fs.writeFileSync(discoveryFile, JSON.stringify(body), { mode: 0o600 });
  fs.chmodSync(discoveryFile, 0o600);
}

function env() {
  return {
    GEMINI_CLI_IDE_SERVER_PORT: String(port),
    GEMINI_CLI_IDE_WORKSPACE_PATH: workspaces.join(path.delimiter),
    GEMINI_CLI_IDE_AUTH_TOKEN: authToken,
    GEMINI_CLI_IDE_PID: String(opts.idePid),
  };
}

let stopping = false;
function stop(code) {
  if (stopping) return;
  stopping = true;
  try {
    if (discoveryFile) fs.rmSync(discoveryFile, { force: true });
  } catch {}
  process.exit(code);
}
process.on('SIGINT', () => stop(0));
process.on('SIGTERM', () => stop(0));

// ---- editor messages ----
function onEditorLine(line) {
  if (line.trim() === '') return;
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    return toEditor({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
  }
  if (msg.id !== undefined && msg.method === undefined) {
    const call = editorCalls.get(msg.id);
    if (!call) return;
    editorCalls.delete(msg.id);
    clearTimeout(call.timer);
    if (msg.error) call.reject(new Error(msg.error.message));
    else call.resolve(msg.result);
    return;
  }
  const p = msg.params || {};
  try {
    switch (msg.method) {
      case 'editor/focus':
        focus(p.path, p.cursor, p.selectedText);
        break;
      case 'editor/selection':
        selection(p.path, p.cursor, p.selectedText);
        break;
      case 'editor/close':
      case 'editor/delete':
        remove(p.path);
        break;
      case 'editor/rename':
        rename(p.oldPath, p.newPath);
        break;
      case 'workspace/update':
        if (Array.isArray(p.paths)) workspaces = p.paths.map((w) => path.resolve(w));
        if (typeof p.trusted === 'boolean') trusted = p.trusted;
        writeDiscovery();
        changed();
        break;
      case 'diff/accepted':
        if (openDiffs.delete(p.filePath)) broadcast('ide/diffAccepted', { filePath: p.filePath, content: p.content });
        break;
      case 'diff/rejected':
        if (openDiffs.delete(p.filePath)) broadcast('ide/diffRejected', { filePath: p.filePath });
        break;
      default:
        if (msg.id !== undefined) toEditor({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: `unknown method ${msg.method}` } });
        return;
    }
    if (msg.id !== undefined) toEditor({ jsonrpc: '2.0', id: msg.id, result: {} });
  } catch (err) {
    if (msg.id !== undefined) toEditor({ jsonrpc: '2.0', id: msg.id, error: { code: -32602, message: err.message } });
    else console.error(`reference: ${msg.method}: ${err.message}`);
  }
}

const server = app.listen(0, '127.0.0.1', () => {
  port = server.address().port;
  writeDiscovery();
  toEditor({ jsonrpc: '2.0', method: 'server/ready', params: { port, discoveryFile, env: env() } });
  const rl = readline.createInterface({ input: process.stdin });
  rl.on('line', onEditorLine);
  rl.on('close', () => stop(0));
});

setInterval(() => {
  for (const s of sessions.values()) {
    if (s.missedPings >= 3) continue;
    s.transport.send({ jsonrpc: '2.0', method: 'ping' }).then(
      () => (s.missedPings = 0),
      () => s.missedPings++,
    );
  }
}, PING_MS).unref();
