/**
 * `npm run bench -- vault-resolve`: resolving a config with 50 vault references (25 SECRET, 25 VAR).
 * Ceiling, measured in the same run: the least work any resolver must do — the one SELECT of those
 * 50 rows plus 25 Fernet decryptions, called directly. Also shown: one query per reference (the
 * N-query design the resolver avoids). Medians over many runs; the ratio is what to watch.
 * Store: SVC_DATABASE_URL (default in-memory SQLite).
 */
import pino from 'pino';
import { deriveFernetKey, Fernet } from '../../src/areas/vault/fernet.js';
import { createVaultService } from '../../src/areas/vault/service.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { openStore } from '../../src/db/store.js';
import { systemClock } from '../../src/lib/clock.js';

const url = process.env.SVC_DATABASE_URL ?? 'sqlite::memory:';
const RUNS = Number(process.env.BENCH_RUNS ?? 300);
const REFS = 50;
const KEY = 'bench-vault-key';

const store = openStore(url);
await migrateToLatest(store);
const vault = createVaultService({
  store,
  clock: systemClock,
  log: pino({ level: 'silent' }),
  encryptionKey: KEY,
});
const stamp = Date.now().toString(36);
for (let i = 0; i < 200; i++) {
  await vault.create('bench', {
    key: `b${stamp}_${i}`,
    kind: i % 2 ? 'SECRET' : 'VAR',
    value: `value-${i}-${'x'.repeat(40)}`,
  });
}
const keys = Array.from({ length: REFS }, (_, i) => `b${stamp}_${i}`);
const config = Object.fromEntries(keys.map((k, i) => [`field_${i}`, i % 2 ? `$secret:${k}` : `$var:${k}`]));
const fernet = new Fernet(deriveFernetKey(KEY));

async function ceiling() {
  const rows = await store.db
    .selectFrom('vault_entry')
    .select(['key', 'kind', 'value', 'enabled'])
    .where('key', 'in', keys)
    .where('deleted_at', 'is', null)
    .execute();
  for (const r of rows) if (r.kind === 'SECRET') fernet.decrypt(r.value);
}

async function perReference() {
  for (const k of keys) {
    const r = await store.db
      .selectFrom('vault_entry')
      .select(['key', 'kind', 'value', 'enabled'])
      .where('key', '=', k)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
    if (r?.kind === 'SECRET') fernet.decrypt(r.value);
  }
}

async function median(fn: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 20; i++) await fn(); // warm-up
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = process.hrtime.bigint();
    await fn();
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

// Interleave the three measurements twice so drift on a shared machine hits them alike.
const results = { resolve: [] as number[], ceiling: [] as number[], perRef: [] as number[] };
for (let round = 0; round < 2; round++) {
  results.resolve.push(await median(() => vault.resolveReferences(config)));
  results.ceiling.push(await median(ceiling));
  results.perRef.push(await median(perReference));
}
const best = (xs: number[]) => Math.min(...xs);
const r = best(results.resolve);
const c = best(results.ceiling);
const n = best(results.perRef);
console.log(
  `vault-resolve on ${store.dialect}: ${REFS} references (25 SECRET, 25 VAR), median of ${RUNS} runs`,
);
console.log(`  resolveReferences        ${r.toFixed(3)} ms`);
console.log(`  ceiling (1 query + 25 decrypts, direct)  ${c.toFixed(3)} ms`);
console.log(`  one query per reference  ${n.toFixed(3)} ms`);
console.log(
  `  ratio resolve / ceiling  ${(r / c).toFixed(2)}x   (per-reference design: ${(n / c).toFixed(2)}x)`,
);
await store.close();
