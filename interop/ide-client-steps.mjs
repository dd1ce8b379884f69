// Plays Gemini CLI with its REAL client code (IdeClient from
// @google/gemini-cli-core) in the current directory and environment,
// exactly as a `gemini` started there connects to its IDE, then walks
// through the steps a test answers as the editor:
//   1. connect: prints {"step":"connect", status, details, ide, diffing, transport}
//   2. waits until the context's active file is argv[2]: {"step":"context", file}
//   3. openDiff(argv[3], "proposal\n"): {"step":"diff", status, content}
//   4. openDiff(argv[3], "second\n"): {"step":"diff", status, content}
// One JSON line per step on stdout; the library's logs go to stderr.
// Usage: node ide-client-steps.mjs <interop-dir> <active-file> <diff-file>
import path from 'node:path';
import { pathToFileURL } from 'node:url';

for (const level of ['log', 'debug', 'info', 'warn']) {
  console[level] = (...args) => process.stderr.write(args.map(String).join(' ') + '\n');
}
const out = process.stdout.write.bind(process.stdout);
process.stdout.write = (chunk, ...rest) => process.stderr.write(chunk, ...rest);
const step = (v) => out(JSON.stringify(v) + '\n');
process.on('unhandledRejection', (err) => process.stderr.write(`unhandled rejection: ${err?.message ?? err}\n`));

const [interopDir, active, target] = process.argv.slice(2);
const core = await import(pathToFileURL(path.join(interopDir, 'node_modules/@google/gemini-cli-core/dist/index.js')).href);
const { IdeClient, ideContextStore } = core;
const client = await IdeClient.getInstance();
await client.connect({ logToConsole: false });
const state = client.getConnectionStatus();
step({
  step: 'connect', status: state.status, details: state.details ?? null,
  ide: client.getCurrentIde()?.displayName ?? null, diffing: client.isDiffingEnabled(),
  // The MCP client's name says which transport connected:
  // streamable-http-client or stdio-client.
  transport: client.client?._clientInfo?.name ?? null,
});
if (state.status !== 'connected') process.exit(1);
for (const end = Date.now() + 30_000; ;) {
  const f = (ideContextStore.get()?.workspaceState?.openFiles ?? []).find((x) => x.isActive);
  if (f?.path === active) { step({ step: 'context', file: f }); break; }
  if (Date.now() > end) { step({ step: 'context', error: 'timed out', context: ideContextStore.get() ?? null }); process.exit(1); }
  await new Promise((r) => setTimeout(r, 20));
}
for (const proposal of ['proposal\n', 'second\n']) {
  const r = await client.openDiff(target, proposal);
  step({ step: 'diff', status: r.status, content: r.content ?? null });
}
process.exit(0);
