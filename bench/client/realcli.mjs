// The real Gemini CLI's client side, measured doing what bench/client
// measures gemkit's Go client doing, in the same run and the same
// directory: choosing a discovery file among many, and connecting to a
// companion until its first context arrives.
//
// It uses the real code of @google/gemini-cli-core (from interop/), not a
// copy: getIdeProcessInfo, getConnectionConfigFromFile, detectIde and
// IdeClient.
//
//   node bench/client/realcli.mjs CHOOSE_ITERATIONS CONNECT_ITERATIONS
//
// The environment (TMPDIR, cwd, SSH_CONNECTION) is set by the harness. It
// prints one line `REALCLI <json>` on stdout; the library's logging goes
// to stderr.

import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

for (const level of ['log', 'debug', 'info', 'warn']) {
  console[level] = (...args) => process.stderr.write(args.map(String).join(' ') + '\n');
}
const realStdoutWrite = process.stdout.write.bind(process.stdout);
process.stdout.write = (chunk, ...rest) => process.stderr.write(chunk, ...rest);

const here = path.dirname(fileURLToPath(import.meta.url));
const ideDir = path.join(here, '..', '..', 'interop', 'node_modules', '@google', 'gemini-cli-core', 'dist', 'src', 'ide');
const load = (f) => import(pathToFileURL(path.join(ideDir, f)).href);
const { getConnectionConfigFromFile } = await load('ide-connection-utils.js');
const { getIdeProcessInfo } = await load('process-utils.js');
const { detectIde } = await load('detect-ide.js');
const { IdeClient } = await load('ide-client.js');
const { ideContextStore } = await load('ideContext.js');

const [chooseN, connectN] = process.argv.slice(2).map(Number);
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;

// 1. The whole choose step: find the IDE process (the ps walk), choose
//    the discovery file, decide which IDE it is.
const walkProc = await getIdeProcessInfo();
const chooseOnly = [];
const full = [];
let chosen;
for (let i = 0; i < chooseN; i++) {
  let t0 = process.hrtime.bigint();
  const cfg = await getConnectionConfigFromFile(walkProc.pid);
  chooseOnly.push(ms(t0));
  chosen = cfg;
  t0 = process.hrtime.bigint();
  const proc = await getIdeProcessInfo();
  const c2 = await getConnectionConfigFromFile(proc.pid);
  detectIde(proc, c2?.ideInfo);
  full.push(ms(t0));
}

// 2. Connect to first context, each time with a fresh IdeClient set up
//    as IdeClient.getInstance() sets up its singleton.
const connect = [];
for (let i = 0; i < connectN; i++) {
  const t0 = process.hrtime.bigint();
  const first = new Promise((resolve) => {
    const unsub = ideContextStore.subscribe((ctx) => {
      if (ctx) {
        unsub();
        resolve();
      }
    });
  });
  const client = new IdeClient();
  client.ideProcessInfo = await getIdeProcessInfo();
  const cfg = await getConnectionConfigFromFile(client.ideProcessInfo.pid);
  client.currentIde = detectIde(client.ideProcessInfo, cfg?.ideInfo);
  await client.connect({ logToConsole: false });
  const state = client.getConnectionStatus();
  if (state.status !== 'connected') {
    realStdoutWrite(`REALCLI ${JSON.stringify({ error: state.details })}\n`);
    process.exit(1);
  }
  await first;
  connect.push(ms(t0));
  await client.disconnect();
}

realStdoutWrite(
  `REALCLI ${JSON.stringify({ chooseOnly, full, connect, chosenPort: chosen?.port ?? null, idePid: walkProc.pid })}\n`,
);
process.exit(0);
