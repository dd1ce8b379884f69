// Runs Qwen Code's own choice of a companion lock file
// (IdeClient.getConnectionConfigFromFile of @qwen-code/qwen-code, whose
// bundle exports IdeClient from one of its chunks) on cases read as a JSON
// array from stdin, so that gemkit's Go implementation can be compared
// with it on the same files. Each case: {qwenHome, tmpdir, pid, cwd,
// envPort?}. Prints one line `PARITY <json>`: for each case the chosen
// file's port (null if none), the ports it rejected for their workspace,
// and the workspace check's words for the chosen file. Like Qwen Code
// itself, it deletes the lock files it finds stale.

import { readdir, readFile } from 'node:fs/promises';

for (const level of ['log', 'debug', 'info', 'warn', 'error']) {
  console[level] = (...args) => process.stderr.write(args.map(String).join(' ') + '\n');
}
const chunks = new URL('./node_modules/@qwen-code/qwen-code/chunks/', import.meta.url);
let IdeClient;
for (const name of await readdir(chunks)) {
  if (!name.endsWith('.js')) continue;
  const src = await readFile(new URL(name, chunks), 'utf8');
  if (!src.includes('getConnectionConfigFromFile') || !/^export \{/m.test(src)) continue;
  ({ IdeClient } = await import(new URL(name, chunks).href));
  if (IdeClient) break;
}
if (!IdeClient) throw new Error('no chunk of @qwen-code/qwen-code exports IdeClient');

let input = '';
for await (const chunk of process.stdin) input += chunk;
const out = [];
for (const c of JSON.parse(input)) {
  process.env.QWEN_HOME = c.qwenHome;
  process.env.TMPDIR = c.tmpdir;
  if (c.envPort) process.env.QWEN_CODE_IDE_SERVER_PORT = c.envPort;
  else delete process.env.QWEN_CODE_IDE_SERVER_PORT;
  process.chdir(c.cwd);
  const client = new IdeClient();
  client.ideProcessInfo = c.pid ? { pid: c.pid, command: '' } : undefined;
  const cfg = await client.getConnectionConfigFromFile();
  const v = cfg ? IdeClient.validateWorkspacePath(cfg.workspacePath, process.cwd()) : { isValid: false };
  out.push({
    port: cfg?.port ?? null,
    rejected: [...client.workspaceRejectedPorts].map(Number),
    error: cfg && cfg.workspacePath !== undefined ? (v.error ?? null) : null,
  });
}
process.stdout.write(`PARITY ${JSON.stringify(out)}\n`);
