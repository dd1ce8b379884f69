// Checks what agents wrote against the ACP v1 schema (acp-schema.mjs),
// from logs a wrapper kept of each agent process: NAME.in, what the
// client wrote to it, and NAME.out, what it wrote back. Prints
// {checked, invalid: [{file, problem, line}]} as JSON.
//
// Usage: node acp-validate.mjs DIR
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { inspect } from "./acp-schema.mjs";

const dir = process.argv[2];
const out = { checked: 0, files: 0, invalid: [] };
for (const f of readdirSync(dir).filter((f) => f.endsWith(".out"))) {
  out.files++;
  const asked = new Map();
  let input = "";
  try {
    input = readFileSync(join(dir, f.replace(/\.out$/, ".in")), "utf8");
  } catch {}
  for (const line of input.split("\n")) {
    try {
      const m = JSON.parse(line);
      if (m.method && m.id !== undefined) asked.set(m.id, m.method);
    } catch {}
  }
  for (const line of readFileSync(join(dir, f), "utf8").split("\n")) {
    if (line === "") continue;
    out.checked++;
    const problem = inspect(line, asked);
    if (problem) out.invalid.push({ file: f, problem, line: line.slice(0, 2000) });
  }
}
process.stdout.write(JSON.stringify(out) + "\n");
