/**
 * bench/auth: throughput of an API-key-authenticated GET /api/v1/role_scope against GET /healthz of
 * the same server in the same run (issue 3 goal: ratio >= 0.5). Rounds alternate; medians are printed.
 * Usage: npm run bench -- auth [sqlite|postgres://...] ; SVC_BENCH_SECONDS, SVC_BENCH_ROUNDS.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { buildApp } from '../../src/app/build-app.js';
import { closeContext, createContext } from '../../src/app/runtime.js';
import { loadConfig } from '../../src/config/config.js';
import { load, median } from '../lib/load.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-bench-auth-'));
const target = process.argv[2] ?? 'sqlite';
const databaseUrl = target === 'sqlite' ? `sqlite:${dir}/svc.db` : target;
const seconds = Number(process.env.SVC_BENCH_SECONDS ?? 3);
const rounds = Number(process.env.SVC_BENCH_ROUNDS ?? 5);

const config = loadConfig({
  NODE_ENV: 'production',
  SVC_DATABASE_URL: databaseUrl,
  SVC_WORKER: 'off',
  SVC_JWT_SECRET: 'bench-jwt-secret-bench-jwt-secret-0123456789',
  SVC_VAULT_ENCRYPTION_KEY: 'bench',
  SVC_LOG_LEVEL: 'silent',
  SVC_PASSWORD_HASH_COST: '10',
});
const ctx = await createContext(config, { log: pino({ level: 'silent' }) });
const { app } = await buildApp(ctx);
const address = await app.listen({ port: 0, host: '127.0.0.1' });

const identity = ctx.services.identity;
const user = await identity.createUser(null, {
  email: `bench-${Date.now()}@example.test`,
  password: 'bench-password',
  role_keys: ['integration'],
});
const key = await identity.createApiKey(
  { userId: user.id, scopes: await identity.scopesOfUser(user.id), authPath: 'password' },
  { name: 'bench', scope_keys: ['user:read'], expires_in: 3600 },
);

// Warm up both paths (JIT, caches, connections).
await load(`${address}/healthz`, {}, 1000);
await load(`${address}/api/v1/role_scope`, { 'x-api-key': key.token }, 1000);

const health: number[] = [];
const scoped: number[] = [];
const p50: number[] = [];
for (let i = 0; i < rounds; i++) {
  health.push((await load(`${address}/healthz`, {}, seconds * 1000)).rps);
  const r = await load(
    `${address}/api/v1/role_scope`,
    { authorization: `Bearer ${key.token}` },
    seconds * 1000,
  );
  if (r.errors) throw new Error(`${r.errors} failed requests`);
  scoped.push(r.rps);
  p50.push(r.p50Ms);
}

const ratio = median(scoped) / median(health);
console.log(`store: ${ctx.store.dialect}, ${rounds} rounds x ${seconds}s, 16 connections`);
console.log(`ceiling  GET /healthz                        ${median(health).toFixed(0).padStart(7)} req/s`);
console.log(
  `measured GET /api/v1/role_scope (API key)    ${median(scoped).toFixed(0).padStart(7)} req/s  p50 ${median(p50).toFixed(2)} ms`,
);
console.log(`ratio ${ratio.toFixed(2)} (goal >= 0.50) ${ratio >= 0.5 ? 'PASS' : 'BELOW GOAL'}`);

await app.close();
await closeContext(ctx);
rmSync(dir, { recursive: true, force: true });
