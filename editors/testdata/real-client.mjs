// Plays Gemini CLI against an editor plugin's companion with the REAL
// client code: IdeClient from @google/gemini-cli-core, which finds the
// companion through the discovery file and the GEMINI_CLI_IDE_* variables
// the editor exported, exactly as a `gemini` started in the editor's
// terminal does.
//
// Usage: node real-client.mjs <interop-dir> <workspace>
// The test writes one JSON command per line on stdin and reads one JSON
// answer per line on stdout:
//   {"op":"connect"}                                   -> {status, ide, diffing}
//   {"op":"waitActive","path":P,"line":L,"character":C} -> {file}
//   {"op":"waitOpen","path":P}                         -> {file}
//   {"op":"openDiff","path":P,"content":S[,"write":true]} -> {status, content, onDisk}
//   {"op":"quit"}                                      -> exits
// The waits give up after 15 s, or after timeoutMs when given.
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { pathToFileURL } from 'node:url';

// stdout carries the answers only; the library's logs go to stderr.
for (const level of ['log', 'debug', 'info', 'warn']) {
  console[level] = (...args) => process.stderr.write(args.map(String).join(' ') + '\n');
}
const answerOut = process.stdout.write.bind(process.stdout);
process.stdout.write = (chunk, ...rest) => process.stderr.write(chunk, ...rest);
const answer = (v) => answerOut(JSON.stringify(v) + '\n');
process.on('unhandledRejection', (err) => process.stderr.write(`unhandled rejection: ${err?.message ?? err}\n`));

const [interopDir, workspaceArg] = process.argv.slice(2);
if (!interopDir || !workspaceArg) {
  process.stderr.write('usage: node real-client.mjs <interop-dir> <workspace>\n');
  process.exit(2);
}
process.chdir(fs.realpathSync(workspaceArg));
const core = await import(pathToFileURL(path.join(interopDir, 'node_modules/@google/gemini-cli-core/dist/index.js')).href);
const { IdeClient, ideContextStore } = core;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let client;

async function handle(cmd) {
  switch (cmd.op) {
    case 'connect': {
      client = await IdeClient.getInstance();
      await client.connect({ logToConsole: false });
      return { status: client.getConnectionStatus().status, ide: client.getCurrentIde()?.displayName ?? null, diffing: client.isDiffingEnabled() };
    }
    case 'waitActive': {
      const end = Date.now() + (cmd.timeoutMs ?? 15_000);
      for (;;) {
        const files = ideContextStore.get()?.workspaceState?.openFiles ?? [];
        const f = files.find((x) => x.isActive);
        if (f && f.path === cmd.path && f.cursor?.line === cmd.line && f.cursor?.character === cmd.character) return { file: f };
        if (Date.now() > end) return { error: 'timed out', files };
        await sleep(20);
      }
    }
    case 'waitOpen': {
      const end = Date.now() + (cmd.timeoutMs ?? 15_000);
      for (;;) {
        const files = ideContextStore.get()?.workspaceState?.openFiles ?? [];
        const f = files.find((x) => x.path === cmd.path);
        if (f) return { file: f };
        if (Date.now() > end) return { error: 'timed out', files };
        await sleep(20);
      }
    }
    case 'openDiff': {
      const r = await client.openDiff(cmd.path, cmd.content);
      // What the CLI finds on disk once the answer has come: it reads the
      // file then to tell what changed, and writes the accepted text
      // (write_file's execute in gemini-cli 0.61.0), which write asks for.
      let onDisk = null;
      try { onDisk = fs.readFileSync(cmd.path, 'utf8'); } catch {}
      if (cmd.write && r.status === 'accepted') fs.writeFileSync(cmd.path, r.content ?? cmd.content);
      return { status: r.status, content: r.content ?? null, onDisk };
    }
    case 'quit':
      process.exit(0);
  }
  return { error: `unknown op ${cmd.op}` };
}

const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  let result;
  try {
    result = await handle(JSON.parse(line));
  } catch (err) {
    result = { error: String(err?.stack ?? err) };
  }
  answer(result);
}
process.exit(0);
