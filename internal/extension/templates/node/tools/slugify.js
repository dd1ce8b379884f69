// slugify: prints a lower-case URL slug of --text.
'use strict';

function flag(name) {
  const i = process.argv.indexOf('--' + name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : undefined;
}

const text = flag('text');
if (text === undefined) {
  process.stderr.write('usage: slugify.js --text TEXT\n');
  process.exit(2);
}
const slug = text
  .normalize('NFKD')
  .replace(/[\u0300-\u036f]/g, '')
  .toLowerCase()
  .replace(/[^a-z0-9]+/g, '-')
  .replace(/^-+|-+$/g, '');
process.stdout.write(slug + '\n');
