/** Writes README.md's configuration table from src/config/schema.ts (test/config-table.test.ts checks it). */
import { readFileSync, writeFileSync } from 'node:fs';
import { withConfigTable } from '../src/config/table.js';

const path = new URL('../README.md', import.meta.url);
writeFileSync(path, withConfigTable(readFileSync(path, 'utf8')));
