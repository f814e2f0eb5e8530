/**
 * `npm run bench -- questionnaires`: the two reads of the catalogue whose cost grows with the data.
 *
 * 1. Snapshot: rebuilding the state at the latest of REVISIONS revisions of a ~10 KB payload (each
 *    revision changes one item) by replaying every diff. Ceiling, measured in the same run: the least
 *    any replay must do, the one SELECT of those revision rows and JSON.parse of their diffs.
 * 2. Narrowed list: one page of GET /questionnaire (as the service runs it) for a provider holding a
 *    grant on one top folder of a 3-level tree, against the same page for an admin (no narrowing) as
 *    the ceiling: the cost of the permission rule (a recursive CTE over the granted folders).
 *
 * Medians over many runs, interleaved; the ratios are what to watch. Store: SVC_DATABASE_URL
 * (default in-memory SQLite).
 */
import pino from 'pino';
import { closeContext, createContext } from '../../src/app/runtime.js';
import { loadConfig } from '../../src/config/config.js';
import type { Principal } from '../../src/http/access.js';

const url = process.env.SVC_DATABASE_URL ?? 'sqlite::memory:';
const RUNS = Number(process.env.BENCH_RUNS ?? 200);
const REVISIONS = Number(process.env.BENCH_REVISIONS ?? 300);
const ITEMS = 100;

const config = loadConfig({
  NODE_ENV: 'test',
  SVC_DATABASE_URL: url,
  SVC_WORKER: 'off',
  SVC_JWT_SECRET: 'bench-jwt-secret-that-is-long-enough-0123456789',
  SVC_VAULT_ENCRYPTION_KEY: 'bench-vault-key',
  SVC_PASSWORD_HASH_COST: '10',
});
const ctx = await createContext(config, { log: pino({ level: 'silent' }) });
const { identity, questionnaires, folders, permissions } = ctx.services;
const stamp = Date.now().toString(36);
const as = async (roles: string[]): Promise<Principal> => {
  const u = await identity.createUser(null, {
    email: `${roles[0]}-${stamp}@bench.test`,
    password: 'bench-password-1',
    role_keys: roles,
  });
  return { userId: u.id, scopes: new Set(), authPath: 'password' };
};
const admin = await as(['admin']);
const provider = await as(['provider']);

// ---- data: one long history
const item = (i: number, v: number) => ({
  id: `item_${i}`,
  text: `Question ${i} ${'lorem ipsum '.repeat(6)}`,
  version: v,
});
let payload = { items: Array.from({ length: ITEMS }, (_, i) => item(i, 0)) };
const q = await questionnaires.create(admin, { name: 'long history', payload });
for (let r = 1; r < REVISIONS; r++) {
  payload = { items: payload.items.map((it, i) => (i === r % ITEMS ? item(i, r) : it)) };
  await questionnaires.update(admin, q.id, { payload });
}
const history = await ctx.store.db
  .selectFrom('questionnaire_revision')
  .select(['id', 'sequence'])
  .where('questionnaire_id', '=', q.id)
  .orderBy('sequence', 'desc')
  .executeTakeFirstOrThrow();

// ---- data: a tree of 10 top folders x 10 x 10 (1110 folders), 2 questionnaires in each leaf
const tops: string[] = [];
for (let a = 0; a < 10; a++) {
  const top = await folders.create(admin, { name: `top ${a}` });
  tops.push(top.id);
  for (let b = 0; b < 10; b++) {
    const mid = await folders.create(admin, { name: `mid ${a}.${b}`, parent_id: top.id });
    for (let c = 0; c < 10; c++) {
      const leaf = await folders.create(admin, { name: `leaf ${a}.${b}.${c}`, parent_id: mid.id });
      for (let k = 0; k < 2; k++)
        await questionnaires.create(admin, { name: `q ${a}.${b}.${c}.${k}`, folder_id: leaf.id });
    }
  }
}
await permissions.folder.create(admin, tops[3]!, { user_id: provider.userId, level: 'VIEW' });
const page = { limit: 25, offset: 0, sort_by: 'created_at', sort_dir: 'desc' as const };

async function median(fn: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 10; i++) await fn();
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = process.hrtime.bigint();
    await fn();
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((x, y) => x - y);
  return times[Math.floor(times.length / 2)]!;
}

const snapshot = () => questionnaires.snapshot(admin, q.id, history.id);
const loadHistory = async () => {
  const rows = await ctx.store.db
    .selectFrom('questionnaire_revision')
    .selectAll()
    .where('questionnaire_id', '=', q.id)
    .orderBy('sequence')
    .execute();
  for (const r of rows) JSON.parse(r.diffs);
};
const narrowed = () => questionnaires.list(provider, page, {});
const unrestricted = () => questionnaires.list(admin, page, {});

// Sanity: the figures measure real answers.
const snap = await snapshot();
if (JSON.stringify(snap.state.payload) !== JSON.stringify(payload))
  throw new Error('snapshot differs from the current state');
const seen = await narrowed();
if (seen.total !== 200 || seen.items.length !== 25)
  throw new Error(`provider sees ${seen.total}, expected 200`);

const results = {
  snapshot: [] as number[],
  history: [] as number[],
  narrowed: [] as number[],
  unrestricted: [] as number[],
};
for (let round = 0; round < 2; round++) {
  results.snapshot.push(await median(snapshot));
  results.history.push(await median(loadHistory));
  results.narrowed.push(await median(narrowed));
  results.unrestricted.push(await median(unrestricted));
}
const best = (xs: number[]) => Math.min(...xs);
const [s, h, n, u] = [
  best(results.snapshot),
  best(results.history),
  best(results.narrowed),
  best(results.unrestricted),
];
console.log(`questionnaires on ${ctx.store.dialect}, median of ${RUNS} runs (best of 2 interleaved rounds)`);
console.log(`  snapshot at revision ${REVISIONS} (${ITEMS}-item payload)   ${s.toFixed(3)} ms`);
console.log(`  ceiling: load + parse those ${REVISIONS} revisions         ${h.toFixed(3)} ms`);
console.log(`  ratio snapshot / ceiling                        ${(s / h).toFixed(2)}x`);
console.log(`  list page, provider narrowed (200 of 2000 visible)  ${n.toFixed(3)} ms`);
console.log(`  ceiling: same page, admin (no narrowing)            ${u.toFixed(3)} ms`);
console.log(`  ratio narrowed / unrestricted                   ${(n / u).toFixed(2)}x`);
await closeContext(ctx);
