// Runs the MCP Inspector CLI's own runCli (the function its launcher's
// --cli mode calls) once for each argument list read as JSON from stdin,
// in one node process, so a test's many Inspector calls pay node's start
// and the CLI bundle's load once. Each call's stdout is caught apart and
// printed as one JSON array: [{"out": "...", "error": "..."}, ...].
// Usage: node inspector-runs.mjs <path of clients/cli/build/index.js>
import { pathToFileURL } from "node:url";

const { runCli } = await import(pathToFileURL(process.argv[2]).href);
let input = "";
for await (const chunk of process.stdin) input += chunk;
const results = [];
const write = process.stdout.write.bind(process.stdout);
for (const args of JSON.parse(input)) {
  let out = "";
  process.stdout.write = (chunk, encoding, cb) => {
    out += typeof chunk === "string" ? chunk : Buffer.from(chunk).toString();
    const done = typeof encoding === "function" ? encoding : cb;
    if (done) queueMicrotask(() => done());
    return true;
  };
  let error;
  try {
    await runCli([process.argv[0], "mcp-inspector", ...args]);
  } catch (err) {
    error = err instanceof Error ? err.message : String(err);
  } finally {
    process.stdout.write = write;
  }
  results.push(error === undefined ? { out } : { out, error });
}
write(JSON.stringify(results), () => process.exit(0));
