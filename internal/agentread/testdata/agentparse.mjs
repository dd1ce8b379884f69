// Reads texts as the agents read them, for agentread's differential
// tests: JSON as Node reads a file with fs.readFile(path, "utf-8") and
// JSON.parse, YAML as js-yaml's load (the version gemini-cli-core uses).
// Each input on stdin is "json ", "yaml " or "number " (JavaScript's
// Number of a string) and a decimal length, a
// newline, then that many bytes; each answer on stdout is one line:
// "ok CANON" or "err MESSAGE". CANON writes a value so that Go can write
// the same: null, true, false; n:NUMBER (String(n), -0 as -0); s:HEX of
// the string's UTF-8 bytes, or lone if it holds a lone surrogate;
// [a,b]; {KEYHEX:v,...} in the object's own key order; anything else
// js-yaml makes (a Date, a binary) as other:TYPE.
// Usage: node agentparse.mjs INTEROP_DIR
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const yaml = await import(pathToFileURL(path.join(process.argv[2], 'node_modules/js-yaml/index.js')).href);
const loneRE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function str(s) {
  return loneRE.test(s) ? 'lone' : 's:' + Buffer.from(s, 'utf8').toString('hex');
}

function canon(v) {
  if (v === null) return 'null';
  if (v === true || v === false) return String(v);
  if (typeof v === 'number') return 'n:' + (Object.is(v, -0) ? '-0' : String(v));
  if (typeof v === 'string') return str(v);
  if (Array.isArray(v)) return '[' + v.map(canon).join(',') + ']';
  if (typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    return '{' + Object.keys(v).map((k) => str(k) + ':' + canon(v[k])).join(',') + '}';
  }
  if (typeof v === 'undefined') return 'undefined';
  return 'other:' + Object.prototype.toString.call(v);
}

let buf = Buffer.alloc(0);
process.stdin.on('data', (chunk) => {
  buf = Buffer.concat([buf, chunk]);
  for (;;) {
    const nl = buf.indexOf(10);
    if (nl < 0) return;
    const [kind, lenText] = buf.subarray(0, nl).toString().split(' ');
    const len = Number(lenText);
    if (buf.length < nl + 1 + len) return;
    const text = buf.subarray(nl + 1, nl + 1 + len).toString('utf8');
    buf = buf.subarray(nl + 1 + len);
    let out;
    try {
      const read = { json: JSON.parse, yaml: yaml.load, number: Number }[kind];
      out = 'ok ' + canon(read(text));
    } catch (e) {
      out = 'err ' + String(e.message).split('\n')[0];
    }
    process.stdout.write(out + '\n');
  }
});
