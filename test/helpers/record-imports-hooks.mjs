// The resolve hook registered by record-imports.mjs (it runs on the loader's thread).
import { appendFileSync } from 'node:fs';

let file = '';
let matching = '';

export function initialize(data) {
  file = data.file;
  matching = data.matching;
}

export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  if (resolved.url.includes(matching)) appendFileSync(file, `${resolved.url}\n`);
  return resolved;
}
