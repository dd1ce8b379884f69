// Interop check of gemkit's IDE companion against the REAL Gemini CLI client.
//
// Usage: node companion-interop.mjs <gemkit-binary> <workspace-dir>
//
// This script plays both ends around `gemkit ide serve --editor stdio`:
//   - the editor, on the child's stdin/stdout (the stdio editor protocol), and
//   - the CLI, with IdeClient from @google/gemini-cli-core, which finds the
//     companion through its discovery file exactly as Gemini CLI does.
// It prints exactly one line `INTEROP-RESULT <json>` on stdout; the library's
// own logging is sent to stderr so that it never mixes with that line.

import { fork, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

// Keep stdout for the result line only.
for (const level of ['log', 'debug', 'info', 'warn']) {
  console[level] = (...args) => process.stderr.write(args.map(String).join(' ') + '\n');
}
const realStdoutWrite = process.stdout.write.bind(process.stdout);
process.stdout.write = (chunk, ...rest) => process.stderr.write(chunk, ...rest);

// IdeClient.openDiff chains `.finally(release)` on the promise it returns, so
// a failed diff also rejects that chained copy; Gemini CLI has a process-wide
// handler for such rejections, and so does this script.
process.on('unhandledRejection', (err) => process.stderr.write(`unhandled rejection (expected for a failed diff): ${err?.message ?? err}\n`));

const [gemkit, workspaceArg] = process.argv.slice(2);
if (!gemkit || !workspaceArg) {
  process.stderr.write('usage: node companion-interop.mjs <gemkit-binary> <workspace-dir>\n');
  process.exit(2);
}
const workspace = fs.realpathSync(workspaceArg);
const checks = [];
function check(name, ok, detail) {
  checks.push({ name, ok: !!ok, detail: ok ? undefined : detail });
  process.stderr.write(`${ok ? 'ok  ' : 'FAIL'} ${name}${ok ? '' : ': ' + JSON.stringify(detail)}\n`);
}
function finish(code) {
  const ok = code === 0 && checks.length > 0 && checks.every((c) => c.ok);
  realStdoutWrite(`INTEROP-RESULT ${JSON.stringify({ ok, checks })}\n`);
  process.exit(ok ? 0 : 1);
}
// Every bound is generous: on a loaded machine a Node process that loads
// gemini-cli-core can take tens of seconds to start; a wait that passes
// costs no more for it.
const overall = setTimeout(() => {
  check('finished within 4 min', false, 'timed out');
  finish(1);
}, 240_000);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, fn, ms = 30_000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

// ---- the editor side: the child's stdin/stdout --------------------------
const child = spawn(gemkit, ['ide', 'serve', '--editor', 'stdio', '--workspace', workspace,
  '--ide-pid', String(process.pid), '--ide-name', 'gemkit', '--ide-display-name', 'gemkit interop'], {
  stdio: ['pipe', 'pipe', 'inherit'],
  cwd: workspace,
});
const childExit = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
const fromServer = []; // every message gemkit sent the editor
const editor = {
  onOpen: (msg) => reply(msg.id, {}),
  onClose: (msg) => reply(msg.id, { content: null }),
};
function send(obj) { child.stdin.write(JSON.stringify(obj) + '\n'); }
function notify(method, params) { send({ jsonrpc: '2.0', method, params }); }
function reply(id, result) { send({ jsonrpc: '2.0', id, result }); }
readline.createInterface({ input: child.stdout }).on('line', (line) => {
  let msg;
  try { msg = JSON.parse(line); } catch { check('gemkit writes only JSON lines on stdout', false, line); return; }
  fromServer.push(msg);
  if (msg.method === 'diff/open') editor.onOpen(msg);
  if (msg.method === 'diff/close') editor.onClose(msg);
});
const seen = (pred) => fromServer.find(pred);

function rawRequest({ method = 'GET', urlPath, headers = {}, body }) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: serverPort, method, path: urlPath, headers }, (res) => {
      let data = '';
      res.on('data', (d) => { data += d; });
      res.on('end', () => resolve({ status: res.statusCode, body: data }));
    });
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}
let serverPort = 0;

try {
  // ---- server/ready and the discovery file ------------------------------
  const ready = await until('server/ready', () => seen((m) => m.method === 'server/ready'), 10_000);
  const { port, discoveryFile, env } = ready.params;
  serverPort = port;
  const ideDir = path.join(os.tmpdir(), 'gemini', 'ide');
  check('server/ready names the discovery file', discoveryFile === path.join(ideDir, `gemini-ide-server-${process.pid}-${port}.json`), ready.params);
  const st = fs.statSync(discoveryFile);
  check('discovery file has mode 0600', (st.mode & 0o777) === 0o600, (st.mode & 0o777).toString(8));
  const dirMode = fs.statSync(ideDir).mode & 0o777;
  check('discovery directory created with mode 0700', dirMode === 0o700, dirMode.toString(8));
  const disc = JSON.parse(fs.readFileSync(discoveryFile, 'utf8'));
  check('discovery file content', disc.port === port && disc.workspacePath === workspace &&
    /^[0-9a-f]{64}$/.test(disc.authToken) && disc.ideInfo?.name === 'gemkit' &&
    disc.ideInfo?.displayName === 'gemkit interop', { ...disc, authToken: disc.authToken?.length });
  check('server/ready env', env.GEMINI_CLI_IDE_SERVER_PORT === String(port) &&
    env.GEMINI_CLI_IDE_WORKSPACE_PATH === workspace && env.GEMINI_CLI_IDE_AUTH_TOKEN === disc.authToken &&
    env.GEMINI_CLI_IDE_PID === String(process.pid), Object.keys(env));
  const token = disc.authToken;

  // ---- malformed editor input never stops the server ----------------------
  child.stdin.write('this is not json\n');
  const parseErr = await until('parse error reply', () => seen((m) => m.error?.code === -32700));
  check('malformed line answered with JSON-RPC parse error', parseErr.id === null, parseErr);
  send({ jsonrpc: '2.0', id: 'q1', method: 'no/such-method', params: {} });
  const nf = await until('method-not-found reply', () => seen((m) => m.id === 'q1'));
  check('unknown method answered with -32601', nf.error?.code === -32601, nf);

  // ---- editor context before the CLI connects -----------------------------
  const fileA = path.join(workspace, 'a.txt');
  const fileB = path.join(workspace, 'b.txt');
  fs.writeFileSync(fileA, 'alpha\n');
  fs.writeFileSync(fileB, 'beta\n');
  notify('editor/focus', { path: fileB });
  notify('editor/focus', { path: path.join(workspace, 'unsaved-and-not-on-disk.txt') });
  notify('editor/focus', { path: fileA, cursor: { line: 3, character: 5 }, selectedText: 'hello' });

  // ---- the CLI side: the real IdeClient -----------------------------------
  for (const k of Object.keys(process.env)) {
    if (k.startsWith('GEMINI_CLI_IDE_')) delete process.env[k];
  }
  process.env.GEMINI_CLI_IDE_PID = String(process.pid);
  process.env.SSH_CONNECTION = '127.0.0.1 1 127.0.0.1 22'; // this machine has /.dockerenv
  process.chdir(workspace);
  const core = await import('@google/gemini-cli-core');
  const { IdeClient, ideContextStore } = core;
  const client = await IdeClient.getInstance();
  const trust = [];
  client.addTrustChangeListener((v) => trust.push(v));
  await client.connect({ logToConsole: false });
  const status = client.getConnectionStatus();
  check('IdeClient connects through the discovery file', status.status === 'connected', status);
  check('IdeClient sees ideInfo', client.getCurrentIde()?.displayName === 'gemkit interop', client.getCurrentIde());
  check('both tools listed: diffing enabled', client.isDiffingEnabled(), client.availableTools);

  // ---- context -------------------------------------------------------------
  const ctx = await until('context with two files', () => {
    const files = ideContextStore.get()?.workspaceState?.openFiles;
    return files?.length === 2 ? files : undefined;
  });
  check('context: newest file first and active with cursor and selection',
    ctx[0].path === fileA && ctx[0].isActive === true && ctx[0].cursor?.line === 3 &&
    ctx[0].cursor?.character === 5 && ctx[0].selectedText === 'hello', ctx[0]);
  check('context: older file inactive, without cursor or selection',
    ctx[1].path === fileB && !ctx[1].isActive && ctx[1].cursor === undefined && ctx[1].selectedText === undefined, ctx[1]);
  // Within an hour of now tells milliseconds from seconds (1,000 times
  // smaller) and microseconds; a minute did not hold on a loaded machine
  // (TestInteropRealClient, load 30: the file was opened over 60 s
  // before this check ran).
  check('context: millisecond timestamps, newest first',
    ctx[0].timestamp > ctx[1].timestamp && Math.abs(Date.now() - ctx[0].timestamp) < 3_600_000, ctx.map((f) => f.timestamp));
  notify('editor/selection', { path: fileA, cursor: { line: 1, character: 1 }, selectedText: 'x'.repeat(20000) });
  const big = await until('truncated selection', () => {
    const f = ideContextStore.get()?.workspaceState?.openFiles?.[0];
    return f?.selectedText?.length > 5 && f.selectedText.length !== 'hello'.length ? f : undefined;
  });
  check('context: selection cut at 16384 characters and marked',
    big.selectedText === 'x'.repeat(16384) + '... [TRUNCATED]', big.selectedText.length);
  notify('editor/close', { path: fileB });
  await until('closed file gone', () => ideContextStore.get()?.workspaceState?.openFiles?.length === 1);
  check('context: closed file removed', ideContextStore.get().workspaceState.openFiles[0].path === fileA, ideContextStore.get());
  const fileR = path.join(workspace, 'renamed-from.txt');
  const fileR2 = path.join(workspace, 'renamed-to.txt');
  fs.writeFileSync(fileR, 'r\n');
  notify('editor/focus', { path: fileR, cursor: { line: 1, character: 1 } });
  await until('focused file', () => ideContextStore.get()?.workspaceState?.openFiles?.[0]?.path === fileR);
  fs.renameSync(fileR, fileR2);
  notify('editor/rename', { oldPath: fileR, newPath: fileR2 });
  const renamed = await until('renamed file', () => {
    const f = ideContextStore.get()?.workspaceState?.openFiles?.[0];
    return f?.path === fileR2 ? f : undefined;
  });
  check('context: a renamed file keeps its place, cursor and activity', renamed.isActive === true && renamed.cursor?.line === 1 &&
    !ideContextStore.get().workspaceState.openFiles.some((f) => f.path === fileR), ideContextStore.get());
  fs.unlinkSync(fileR2);
  notify('editor/delete', { path: fileR2 });
  await until('deleted file gone', () => !ideContextStore.get()?.workspaceState?.openFiles?.some((f) => f.path === fileR2));
  check('context: a deleted file is removed', ideContextStore.get().workspaceState.openFiles.length === 1, ideContextStore.get());
  notify('editor/focus', { path: fileA });
  await until('a.txt active again', () => ideContextStore.get()?.workspaceState?.openFiles?.[0]?.isActive === true);
  notify('workspace/update', { trusted: false });
  await until('trust change', () => trust.includes(false));
  check('trust change reaches trust listeners', trust.at(-1) === false, trust);
  check('client still connected after context updates', client.getConnectionStatus().status === 'connected', client.getConnectionStatus());

  // ---- diff accepted with the person's edits --------------------------------
  let opened;
  editor.onOpen = (msg) => {
    opened = msg.params;
    reply(msg.id, {});
    setTimeout(() => notify('diff/accepted', { filePath: msg.params.filePath, content: msg.params.newContent + '// edited\n' }), 20);
  };
  const accepted = await client.openDiff(fileA, 'new alpha\n');
  check('editor got diff/open with the proposal', opened?.filePath === fileA && opened?.newContent === 'new alpha\n', opened);
  check('accepted diff resolves with the edited content',
    accepted.status === 'accepted' && accepted.content === 'new alpha\n// edited\n', accepted);

  // ---- diff rejected ---------------------------------------------------------
  editor.onOpen = (msg) => {
    reply(msg.id, {});
    setTimeout(() => notify('diff/rejected', { filePath: msg.params.filePath }), 20);
  };
  const rejected = await client.openDiff(fileB, 'new beta\n');
  check('rejected diff resolves as rejected', rejected.status === 'rejected' && rejected.content === undefined, rejected);

  // ---- a new file: the left side is empty ------------------------------------
  const fileC = path.join(workspace, 'sub', 'c.txt');
  let existedAtOpen;
  editor.onOpen = (msg) => {
    existedAtOpen = fs.existsSync(msg.params.filePath);
    reply(msg.id, {});
    setTimeout(() => notify('diff/accepted', { filePath: msg.params.filePath, content: msg.params.newContent }), 20);
  };
  const created = await client.openDiff(fileC, 'brand new\n');
  check('new file: editor gets the path of a file that does not exist', existedAtOpen === false, existedAtOpen);
  check('new file diff accepted', created.status === 'accepted' && created.content === 'brand new\n', created);

  // ---- closeDiff: the CLI answers instead of the editor ----------------------
  const fileD = path.join(workspace, 'd.txt');
  let openedD = false;
  editor.onOpen = (msg) => { openedD = true; reply(msg.id, {}); };
  editor.onClose = (msg) => {
    reply(msg.id, { content: 'right side as edited\n' });
    // A plugin that also reports the tab closing; the companion must not forward it.
    notify('diff/rejected', { filePath: msg.params.filePath });
  };
  const pending = client.openDiff(fileD, 'proposal\n');
  await until('diff of d.txt open', () => openedD);
  await client.resolveDiffFromCli(fileD, 'accepted');
  const viaCli = await pending;
  check('closeDiff returns the right side; the CLI resolves the diff',
    viaCli.status === 'accepted' && viaCli.content === 'right side as edited\n', viaCli);
  editor.onClose = (msg) => reply(msg.id, { content: null });
  const none = await client.closeDiff(path.join(workspace, 'never-opened.txt'));
  check('closeDiff of no diff returns nothing', none === undefined, none);

  // ---- the editor fails to show a diff ---------------------------------------
  editor.onOpen = (msg) => send({ jsonrpc: '2.0', id: msg.id, error: { code: -32000, message: 'diff view refused' } });
  let openErr;
  try { await client.openDiff(fileA, 'x'); } catch (e) { openErr = e; }
  check('editor error turns into an openDiff failure with its message',
    openErr && /diff view refused/.test(openErr.message), openErr?.message);
  check('client still connected after all diffs', client.getConnectionStatus().status === 'connected', client.getConnectionStatus());

  // ---- a second real CLI connected at the same time ------------------------
  const second = fork(fileURLToPath(new URL('./second-client.mjs', import.meta.url)), [], {
    cwd: workspace, env: process.env, stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const secondExit = new Promise((resolve) => second.on('exit', (code, signal) => resolve({ code, signal })));
  const inbox = [];
  second.on('message', (m) => inbox.push(m));
  const answer = (type) => until(`client 2: ${type}`, () => {
    const i = inbox.findIndex((m) => m.type === type || m.type === 'error');
    return i >= 0 ? inbox.splice(i, 1)[0] : undefined;
  }, 120_000);
  const hello = await answer('connected');
  check('second client connects alongside the first, diffing enabled', hello.status === 'connected' && hello.diffing, hello);
  second.send({ type: 'context' });
  const ctx2 = await answer('context');
  check('second client gets the current context on connecting', ctx2.files?.[0]?.path === fileA && ctx2.files[0].isActive === true, ctx2);

  // While the first client waits on a diff, the second one's closeDiff gets
  // its own answer (the official companion hangs here).
  const fileE = path.join(workspace, 'e.txt');
  const fileF = path.join(workspace, 'f.txt');
  let openedE = false;
  editor.onOpen = (msg) => { openedE = msg.params.filePath === fileE; reply(msg.id, {}); };
  editor.onClose = (msg) => reply(msg.id, { content: msg.params.filePath === fileF ? 'f as edited\n' : null });
  const pendingE = client.openDiff(fileE, 'e\n');
  await until('diff of e.txt open', () => openedE);
  second.send({ type: 'closeDiff', path: fileF });
  const closedF = await answer('closed');
  check('two clients: each gets the answer to its own call', closedF.content === 'f as edited\n', closedF);
  notify('diff/accepted', { filePath: fileE, content: 'e\n' });
  const resE = await pendingE;
  check('two clients: the first client\'s diff still resolves', resE.status === 'accepted' && resE.content === 'e\n', resE);

  // The second client vanishes in the middle of its diff.
  const fileG = path.join(workspace, 'g.txt');
  let openedG = false;
  editor.onOpen = (msg) => { openedG = msg.params.filePath === fileG; reply(msg.id, {}); };
  second.send({ type: 'openDiff', path: fileG, content: 'g\n' });
  await until('diff of g.txt open', () => openedG);
  second.kill('SIGKILL');
  await secondExit;
  notify('diff/accepted', { filePath: fileG, content: 'g\n' });
  const fileH = path.join(workspace, 'h.txt');
  editor.onOpen = (msg) => {
    reply(msg.id, {});
    setTimeout(() => notify('diff/rejected', { filePath: msg.params.filePath }), 10);
  };
  const resH = await client.openDiff(fileH, 'h\n');
  check('a client vanishing mid-diff leaves the other working', resH.status === 'rejected' &&
    client.getConnectionStatus().status === 'connected', { resH, status: client.getConnectionStatus() });

  // ---- raw HTTP: the guard and the extras ------------------------------------
  const auth = { Authorization: `Bearer ${token}` };
  const init = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } });
  const jsonHeaders = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
  let r = await rawRequest({ method: 'POST', urlPath: '/mcp', headers: jsonHeaders, body: init });
  check('no token: 401', r.status === 401, r);
  r = await rawRequest({ method: 'POST', urlPath: '/mcp', headers: { ...jsonHeaders, Authorization: 'Bearer wrong' }, body: init });
  check('wrong token: 401', r.status === 401, r);
  r = await rawRequest({ method: 'POST', urlPath: '/mcp', headers: { ...jsonHeaders, Authorization: token }, body: init });
  check('token without Bearer: 401', r.status === 401, r);
  r = await rawRequest({ method: 'POST', urlPath: '/mcp', headers: { ...jsonHeaders, ...auth, Host: `evil.example:${port}` }, body: init });
  check('foreign Host: 403', r.status === 403, r);
  r = await rawRequest({ method: 'POST', urlPath: '/mcp', headers: { ...jsonHeaders, ...auth, Origin: 'http://evil.example' }, body: init });
  check('Origin header: 403', r.status === 403, r);
  r = await rawRequest({ method: 'POST', urlPath: '/mcp', headers: { ...jsonHeaders, ...auth, 'mcp-session-id': 'not-a-session' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }) });
  check('unknown session: 400 with JSON-RPC -32000', r.status === 400 && JSON.parse(r.body).error?.code === -32000, r);
  r = await rawRequest({ urlPath: '/keep-alive', headers: { ...auth, Host: `localhost:${port}` } });
  check('keep-alive via localhost: 200 with a version', r.status === 200 && typeof JSON.parse(r.body).version === 'string', r);
  r = await rawRequest({ method: 'POST', urlPath: '/write-file', headers: { ...auth, 'Content-Type': 'application/json' },
    body: JSON.stringify({ path: fileA, content: 'written via http\n' }) });
  check('write-file inside the workspace', r.status === 200 && fs.readFileSync(fileA, 'utf8') === 'written via http\n', r);
  await until('file/written', () => seen((m) => m.method === 'file/written' && m.params.path === fileA));
  check('editor told about the written file', true);
  r = await rawRequest({ method: 'POST', urlPath: '/write-file', headers: { ...auth, 'Content-Type': 'application/json' },
    body: JSON.stringify({ path: path.join(os.tmpdir(), 'outside.txt'), content: 'no' }) });
  check('write-file outside the workspace refused', r.status === 403 && !fs.existsSync(path.join(os.tmpdir(), 'outside.txt')), r);

  // ---- shutdown when the editor goes away ------------------------------------
  await client.disconnect();
  child.stdin.end();
  const exit = await Promise.race([childExit, sleep(30_000).then(() => ({ code: 'timeout' }))]);
  check('stdin closed: gemkit exits cleanly', exit.code === 0, exit);
  check('discovery file removed on exit', !fs.existsSync(discoveryFile), discoveryFile);
  clearTimeout(overall);
  finish(0);
} catch (err) {
  check('no exception', false, String(err?.stack ?? err));
  child.kill();
  finish(1);
}
