/**
 * `npm run bench -- <name> [args]` runs bench/<name>/run.ts. Each benchmark prints its figure next
 * to a ceiling measured in the same run (ratios and medians: these machines are noisy).
 */
import { existsSync, readdirSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const names = readdirSync(here, { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(`${here}${d.name}/run.ts`))
  .map((d) => d.name);
const name = process.argv[2];
if (!name || !names.includes(name)) {
  console.error(`usage: npm run bench -- <${names.join('|')}>`);
  process.exit(2);
}
process.argv.splice(2, 1);
await import(pathToFileURL(`${here}${name}/run.ts`).href);
