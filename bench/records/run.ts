/**
 * `npm run bench -- records`: what the folder and questionnaire permissions cost on the lists of
 * records hanging off questionnaires (docs/platform.md "Permissions": enrollments and submissions).
 *
 * Data: a tree of 10 top folders x 10 x 10 (1,110 folders) with 2 questionnaires in each leaf (2,000);
 * SUBMISSIONS submissions and ENROLLMENTS enrollments (1-2 questionnaires each) spread evenly over them.
 * A provider holds one VIEW grant on one top folder: 200 questionnaires, a tenth of the records.
 *
 * Figure: one page (25, newest first) of each list as the service runs it for the provider (a
 * `questionnaire_id in (subquery)` with the recursive folder CTE inside). Ceiling, measured in the same
 * run: the same page for an admin, who is not narrowed. Also a single GET by id, narrowed vs not.
 * Medians over many runs, interleaved rounds; the ratios are what to watch. Store: SVC_DATABASE_URL
 * (default in-memory SQLite).
 *
 * The records are inserted in bulk with SQL (creating 20,000 submissions through the service would only
 * time the set-up); the folders, questionnaires and grant go through the services.
 */
import { sql } from 'kysely';
import pino from 'pino';
import { closeContext, createContext } from '../../src/app/runtime.js';
import { loadConfig } from '../../src/config/config.js';
import type { Principal } from '../../src/http/access.js';
import { newId } from '../../src/lib/ids.js';

const url = process.env.SVC_DATABASE_URL ?? 'sqlite::memory:';
const RUNS = Number(process.env.BENCH_RUNS ?? 200);
const SUBMISSIONS = Number(process.env.BENCH_SUBMISSIONS ?? 20_000);
const ENROLLMENTS = Number(process.env.BENCH_ENROLLMENTS ?? 5_000);

const config = loadConfig({
  NODE_ENV: 'test',
  SVC_DATABASE_URL: url,
  SVC_WORKER: 'off',
  SVC_JWT_SECRET: 'bench-jwt-secret-that-is-long-enough-0123456789',
  SVC_VAULT_ENCRYPTION_KEY: 'bench-vault-key',
  SVC_PASSWORD_HASH_COST: '10',
});
const ctx = await createContext(config, { log: pino({ level: 'silent' }) });
const { identity, questionnaires, folders, permissions, enrollments, submissions } = ctx.services;
const db = ctx.store.db;
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
const patients = await Promise.all(
  Array.from(
    { length: 50 },
    async (_, i) =>
      (
        await identity.createUser(null, {
          email: `patient-${i}-${stamp}@bench.test`,
          password: 'bench-password-1',
          role_keys: ['responder'],
        })
      ).id,
  ),
);

// ---- the catalogue: 1,110 folders, 2,000 questionnaires
const tops: string[] = [];
const qIds: string[] = [];
for (let a = 0; a < 10; a++) {
  const top = await folders.create(admin, { name: `top ${a}` });
  tops.push(top.id);
  for (let b = 0; b < 10; b++) {
    const mid = await folders.create(admin, { name: `mid ${a}.${b}`, parent_id: top.id });
    for (let c = 0; c < 10; c++) {
      const leaf = await folders.create(admin, { name: `leaf ${a}.${b}.${c}`, parent_id: mid.id });
      for (let k = 0; k < 2; k++)
        qIds.push(
          (await questionnaires.create(admin, { name: `q ${a}.${b}.${c}.${k}`, folder_id: leaf.id })).id,
        );
    }
  }
}
await permissions.folder.create(admin, tops[3]!, { user_id: provider.userId, level: 'VIEW' });
const visibleQ = new Set(qIds.slice(600, 800)); // top folder 3 holds questionnaires 600..799

// ---- the records, in bulk
const base = Date.UTC(2026, 0, 1);
const at = (i: number) => new Date(base + i * 1000).toISOString();
const BATCH = 500;
let visibleSubmissions = 0;
for (let start = 0; start < SUBMISSIONS; start += BATCH) {
  const rows = [];
  for (let i = start; i < Math.min(start + BATCH, SUBMISSIONS); i++) {
    const questionnaire_id = qIds[i % qIds.length]!;
    if (visibleQ.has(questionnaire_id)) visibleSubmissions++;
    rows.push({
      id: newId(),
      questionnaire_id,
      questionnaire_revision: 1,
      user_id: patients[i % patients.length]!,
      enrollment_id: null,
      is_anonymous: 0,
      answers: JSON.stringify({ q1: i % 4, q2: (i >> 2) % 4 }),
      metadata: null,
      api_key_id: null,
      created_by: patients[i % patients.length]!,
      created_at: at(i),
      updated_at: at(i),
      updated_by: null,
      deleted_at: null,
    });
  }
  await db.insertInto('questionnaire_submission').values(rows).execute();
}
let visibleEnrollments = 0;
for (let start = 0; start < ENROLLMENTS; start += BATCH) {
  const rows = [];
  const links: Array<{
    enrollment_id: string;
    questionnaire_id: string;
    position: number;
    user_id: string;
    open_key: null;
  }> = [];
  for (let i = start; i < Math.min(start + BATCH, ENROLLMENTS); i++) {
    const id = newId();
    const user_id = patients[i % patients.length]!;
    // Every third enrollment holds two questionnaires, far apart in the tree.
    const qs = [qIds[i % qIds.length]!, ...(i % 3 === 0 ? [qIds[(i + 1000) % qIds.length]!] : [])];
    if (qs.some((q) => visibleQ.has(q))) visibleEnrollments++;
    rows.push({
      id,
      user_id,
      status: 'COMPLETED',
      consent_required: 0,
      consent_version: null,
      consented_at: null,
      starts_at: null,
      ends_at: null,
      schedule: null,
      metadata: null,
      status_reason: null,
      status_changed_at: at(i),
      created_by: admin.userId,
      created_at: at(i),
      updated_at: at(i),
      updated_by: admin.userId,
      deleted_at: null,
    });
    qs.forEach((questionnaire_id, position) => {
      links.push({ enrollment_id: id, questionnaire_id, position, user_id, open_key: null });
    });
  }
  await db.insertInto('enrollment').values(rows).execute();
  await db.insertInto('enrollment_questionnaire').values(links).execute();
}

// PostgreSQL's autovacuum would analyze the freshly loaded tables soon; do it now so the planner sees
// the real row counts (without it, every plan here is made for empty tables).
if (ctx.store.dialect === 'postgres') await sql`analyze`.execute(db);

const page = { limit: 25, offset: 0, sort_by: 'created_at', sort_dir: 'desc' as const };
const userPage = { limit: 25, offset: 0, sort_by: 'last_enrolled_at', sort_dir: 'desc' as const };

// Sanity: the figures measure real, correctly narrowed answers.
const seenS = await submissions.list(provider, page, {});
if (seenS.total !== visibleSubmissions || seenS.items.some((s) => !visibleQ.has(s.questionnaire_id)))
  throw new Error(`provider sees ${seenS.total} submissions, expected ${visibleSubmissions}`);
const seenE = await enrollments.list(provider, page, {});
if (seenE.total !== visibleEnrollments)
  throw new Error(`provider sees ${seenE.total} enrollments, expected ${visibleEnrollments}`);
if ((await submissions.list(admin, page, {})).total !== SUBMISSIONS) throw new Error('admin is narrowed');
const oneVisible = seenS.items[0]!.id;

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

const cases = {
  submissions: {
    narrowed: () => submissions.list(provider, page, {}),
    ceiling: () => submissions.list(admin, page, {}),
  },
  enrollments: {
    narrowed: () => enrollments.list(provider, page, {}),
    ceiling: () => enrollments.list(admin, page, {}),
  },
  enrollment_users: {
    narrowed: () => enrollments.enrolledUsers(provider, userPage, {}),
    ceiling: () => enrollments.enrolledUsers(admin, userPage, {}),
  },
  submission_by_id: {
    narrowed: () => submissions.get(provider, oneVisible),
    ceiling: () => submissions.get(admin, oneVisible),
  },
};
const results: Record<string, { narrowed: number[]; ceiling: number[] }> = {};
for (let round = 0; round < 2; round++) {
  for (const [name, c] of Object.entries(cases)) {
    results[name] ??= { narrowed: [], ceiling: [] };
    results[name].narrowed.push(await median(c.narrowed));
    results[name].ceiling.push(await median(c.ceiling));
  }
}
const best = (xs: number[]) => Math.min(...xs);
console.log(
  `records on ${ctx.store.dialect}: ${SUBMISSIONS} submissions, ${ENROLLMENTS} enrollments over 2000 questionnaires; ` +
    `provider sees ${visibleSubmissions} and ${visibleEnrollments}. Median of ${RUNS} runs (best of 2 interleaved rounds)`,
);
console.log('  case                 narrowed (provider)   ceiling (admin)   ratio');
for (const [name, r] of Object.entries(results)) {
  const n = best(r.narrowed);
  const u = best(r.ceiling);
  console.log(
    `  ${name.padEnd(20)} ${`${n.toFixed(3)} ms`.padStart(14)} ${`${u.toFixed(3)} ms`.padStart(17)} ${`${(n / u).toFixed(2)}x`.padStart(8)}`,
  );
}
await closeContext(ctx);
