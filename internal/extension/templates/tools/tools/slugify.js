// slugify: prints a lower-case URL slug of --text, at most --maxLength
// characters long (gemkit passes the manifest's default when the call
// leaves it out).
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
const maxLength = Number(flag('maxLength') ?? 60);
let slug = text
  .normalize('NFKD')
  .replace(/[\u0300-\u036f]/g, '')
  .toLowerCase()
  .replace(/[^a-z0-9]+/g, '-')
  .replace(/^-+|-+$/g, '');
if (slug.length > maxLength) {
  const cut = slug.slice(0, maxLength);
  slug = cut.includes('-') ? cut.slice(0, cut.lastIndexOf('-')) : cut;
}
process.stdout.write(slug + '\n');
