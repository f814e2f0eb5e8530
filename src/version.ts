import { readFileSync } from 'node:fs';

/** The package version (semantic versioning, CHANGELOG.md); read once at load. */
export const VERSION: string = JSON.parse(
  readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
).version;
