import { createRequire } from 'node:module';
import type pg from 'pg';

const require = createRequire(import.meta.url);
let driver: typeof pg | undefined;

/**
 * The `pg` driver, loaded on first use: a process on SQLite never needs it, and loading it costs
 * heap and code in every thread that does (as nodemailer does; docs/performance.md
 * "Memory").
 */
export function pgDriver(): typeof pg {
  if (!driver) {
    driver = require('pg') as typeof pg;
    // int8 (count(*), bigint) arrives as a string by default; our values fit in a double.
    driver.types.setTypeParser(20, (v) => Number.parseInt(v, 10));
  }
  return driver;
}
