// Connects the REAL Gemini CLI client code (IdeClient of
// @google/gemini-cli-core) to the companion its discovery file names, as a
// `gemini` started in the workspace does, and prints what the client then
// believes, as one JSON line: its status and whether it shows diffs in the
// IDE (isDiffingEnabled: connected, and openDiff and closeDiff among the
// tools its tools/list returned).
//
// Usage: node connect.mjs <interop-dir>   (in the workspace, with TMPDIR
// holding gemini/ide/)
import path from 'node:path';
import { pathToFileURL } from 'node:url';

// stdout carries the answer only; the library's logs go to stderr.
const answer = process.stdout.write.bind(process.stdout);
process.stdout.write = (chunk, ...rest) => process.stderr.write(chunk, ...rest);
for (const level of ['log', 'debug', 'info', 'warn', 'error']) {
  console[level] = (...args) => process.stderr.write(args.map(String).join(' ') + '\n');
}
const core = await import(pathToFileURL(path.join(process.argv[2], 'node_modules/@google/gemini-cli-core/dist/index.js')).href);
const client = await core.IdeClient.getInstance();
await client.connect({ logToConsole: false });
answer(JSON.stringify({ status: client.getConnectionStatus().status, diffing: client.isDiffingEnabled() }) + '\n');
process.exit(0);
