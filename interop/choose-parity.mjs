// Runs the real Gemini CLI's discovery-file choice and workspace check
// (getConnectionConfigFromFile and validateWorkspacePath from
// @google/gemini-cli-core) on cases read as a JSON array from stdin, so
// that gemkit's Go implementation can be compared with it on the same
// files. Each case: {tmpdir, pid, cwd, envPort?}. Prints one line
// `PARITY <json>`: for each case the chosen file's port (null if none),
// its workspacePath and the workspace check's result.

for (const level of ['log', 'debug', 'info', 'warn', 'error']) {
  console[level] = (...args) => process.stderr.write(args.map(String).join(' ') + '\n');
}
const { getConnectionConfigFromFile, validateWorkspacePath } = await import(
  new URL('./node_modules/@google/gemini-cli-core/dist/src/ide/ide-connection-utils.js', import.meta.url).href
);

let input = '';
for await (const chunk of process.stdin) input += chunk;
const out = [];
for (const c of JSON.parse(input)) {
  process.env.TMPDIR = c.tmpdir;
  if (c.envPort) process.env.GEMINI_CLI_IDE_SERVER_PORT = c.envPort;
  else delete process.env.GEMINI_CLI_IDE_SERVER_PORT;
  process.chdir(c.cwd);
  const cfg = await getConnectionConfigFromFile(c.pid);
  const v = validateWorkspacePath(cfg?.workspacePath, process.cwd());
  out.push({ port: cfg?.port ?? null, workspacePath: cfg?.workspacePath ?? null, valid: v.isValid, error: v.error ?? null });
}
process.stdout.write(`PARITY ${JSON.stringify(out)}\n`);
