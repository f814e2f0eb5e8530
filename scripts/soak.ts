/**
 * `npm run soak`: the long crash soak (docs/reliability.md "Crash soak"). Kills real svc processes
 * with SIGKILL at random moments under load, then checks every promise and prints the figures.
 * SQLite (one `svc serve`), PostgreSQL (one `svc serve`) and PostgreSQL with three `svc worker`s.
 *
 *   npm run soak                       # 20 kills each, PostgreSQL at 127.0.0.1:5432
 *   npm run soak -- --kills 40 --seed 1234 --only sqlite
 *   SVC_SOAK_DATABASE_URL=postgres://… npm run soak   # the server to create the soak's database on
 *
 * Restarting the PostgreSQL server itself (not only its connections) is the manual part of the soak:
 * see docs/reliability.md. Exits 1 when a promise is broken.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createPostgresDatabase } from '../test/helpers/database.js';
import { describeReport, runSoak, type SoakOptions, soakHeld } from '../test/soak/harness.js';

const { values } = parseArgs({
  options: {
    kills: { type: 'string', default: '20' },
    seed: { type: 'string' },
    only: { type: 'string' },
  },
});
const kills = Number(values.kills);
const base = process.env.SVC_SOAK_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const runs: Array<{ name: string; topology: SoakOptions['topology'] }> = [
  { name: 'sqlite', topology: { kind: 'single' } },
  { name: 'postgres', topology: { kind: 'single' } },
  { name: 'postgres-workers', topology: { kind: 'workers', workers: 3 } },
];
let broken = false;
for (const run of runs) {
  if (values.only && !run.name.startsWith(values.only)) continue;
  const dir = mkdtempSync(join(tmpdir(), 'svc-soak-'));
  const database =
    run.name === 'sqlite'
      ? { url: `sqlite:${dir}/svc.db`, drop: async () => {} }
      : await createPostgresDatabase(base, 'svc_soak');
  try {
    const report = await runSoak({
      databaseUrl: database.url,
      topology: run.topology,
      kills,
      gapMs: [300, 1_200],
      writers: 8,
      tailMs: 2_000,
      built: true,
      seed: values.seed ? Number(values.seed) : undefined,
      say: (line) => console.log(`  ${line}`),
    });
    console.log(describeReport(report));
    const held = soakHeld(report);
    console.log(held.length === 0 ? '  every promise held\n' : `  BROKEN: ${held.join('; ')}\n`);
    if (held.length > 0) broken = true;
  } finally {
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}
process.exit(broken ? 1 : 0);
