import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { SCOPE_KEYS } from '../../src/areas/identity/scopes.js';
import { ERROR_STATUS } from '../../src/http/errors.js';
import { startTestApp } from '../helpers/app.js';
import { admin } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import { settle } from '../workflows/helpers.js';
import { type Components, deep, mutatedExample, pathValue, queryValue, type Schema } from './arbitraries.js';

/**
 * Every operation of the OpenAPI document, fuzzed (#21 item 4): path, query and body values derived
 * from its schemas and mixed with hostile ones, sent signed in (an admin API key or session) or not.
 * Every answer must be below 500, and every 4xx the contract's `{code, message, details?}` with the
 * status its code has (docs/errors.md). At the end the server still
 * answers /readyz 200 and logged no failed request. A failure prints its seed:
 * SVC_FUZZ_SEED=<seed> npm test -- test/fuzz reproduces it; SVC_FUZZ_RUNS raises the runs per operation.
 */

interface Operation {
  operationId: string;
  parameters?: Array<{ in: 'path' | 'query' | 'header'; name: string; required?: boolean; schema?: Schema }>;
  requestBody?: { content: Record<string, { schema?: Schema; example?: unknown }> };
  responses: Record<string, unknown>;
}
type Doc = { paths: Record<string, Record<string, Operation>>; components: { schemas: Components } };

const SEED = Number(process.env.SVC_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const RUNS = Number(process.env.SVC_FUZZ_RUNS ?? 100);
console.log(`fuzz seed ${SEED} (SVC_FUZZ_SEED=${SEED} reproduces), ${RUNS} runs per operation`);

const t = await startTestApp({
  env: {
    SVC_LOGIN_MAX_ATTEMPTS: '1000000',
    SVC_LOGIN_IP_MAX_ATTEMPTS: '1000000',
    // Webhooks and http calls may aim at 127.0.0.1:9 (nothing listens: refused at once).
    SVC_ALLOW_PRIVATE_NETWORKS: 'true',
    // Configured, so its route answers rather than 503 ANALYTICS.NOT_CONFIGURED.
    SVC_ANALYTICS_SITE_URL: 'https://bi.example.test/',
    SVC_ANALYTICS_EMBED_SECRET: 'fuzz-analytics-embed-secret-0123456789abcdef',
    SVC_ANALYTICS_DASHBOARD_ID: '42',
  },
});
const doc = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json() as Doc;
const components = doc.components.schemas;
const operations = Object.entries(doc.paths)
  .flatMap(
    ([path, ops]) =>
      Object.entries(ops).map(([method, op]) => ({
        path: path.replace(/^\/api\/v1/, ''),
        method: method.toUpperCase(),
        op,
      })),
    // Deletes last, so the operations before them find the seeded records still there.
  )
  .sort((a, b) => Number(a.method === 'DELETE') - Number(b.method === 'DELETE'));

/** Who sends a request: an admin API key with every scope, an admin's session, or nobody. */
const keyOwner = await admin(t);
const created = await t.ctx.services.identity.createApiKey(
  { userId: keyOwner.userId, scopes: new Set(SCOPE_KEYS), authPath: 'password' },
  { name: 'fuzz', scope_keys: [...SCOPE_KEYS], expires_in: 86_400 },
);
const key = {
  id: created.id,
  userId: keyOwner.userId,
  headers: { authorization: `Bearer ${created.token}` },
};
let session = await admin(t);
const headersOf = (who: 'key' | 'session' | 'none'): Record<string, string> =>
  who === 'key' ? key.headers : who === 'session' ? session.headers : {};

const send = (method: string, url: string, who: 'key' | 'session' | 'none', payload?: string) =>
  t.app.inject({
    method: method as 'GET',
    url: `/api/v1${url}`,
    headers: { ...headersOf(who), ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(payload === undefined ? {} : { payload }),
  });

/** Resources to aim path parameters at: one of each made from the document's own examples, then listed. */
const known = new Map<string, Set<string>>();
const remember = (kind: string, value: unknown) => {
  if (typeof value !== 'string') return;
  if (!known.has(kind)) known.set(kind, new Set());
  known.get(kind)?.add(value);
};
const harvest = (kind: string, body: unknown, depth = 0): void => {
  if (depth > 4 || body === null || typeof body !== 'object') return;
  if (Array.isArray(body)) {
    for (const item of body) harvest(kind, item, depth + 1);
    return;
  }
  const record = body as Record<string, unknown>;
  remember(kind, record.id);
  remember('event_type', record.event_type);
  for (const value of Object.values(record)) if (typeof value === 'object') harvest(kind, value, depth + 1);
};
const kindOf = (path: string) => path.split('/')[1];
const listAll = async () => {
  for (const { path, method } of operations) {
    if (method !== 'GET' || path.includes('{')) continue;
    const res = await send('GET', path, 'key');
    if (res.statusCode === 200) harvest(kindOf(path), res.json());
  }
};
/** The example with its references (`folder_id`, `user_id`, a `url`) pointed at what exists here. */
const localised = (example: unknown): unknown => {
  if (example === null || typeof example !== 'object' || Array.isArray(example)) return example;
  const out: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(example)) {
    const kind = field === 'parent_id' ? 'folder' : field.replace(/_ids?$/, '');
    const ids = /_ids?$/.test(field) ? [...(known.get(kind) ?? [])] : [];
    if (ids.length > 0) out[field] = field.endsWith('_ids') ? [ids[0]] : ids[0];
    else out[field] = field === 'url' ? 'http://127.0.0.1:9/hook' : localised(value);
  }
  return out;
};
// Three passes over the examples of the creating operations, each followed by listing everything, so
// a record that needs another (a permission needs its folder) finds it the next time.
await send('POST', '/event_definition', 'key', JSON.stringify({ event_type: 'com.example.export.due' }));
for (let pass = 0; pass < 3; pass++) {
  await listAll();
  for (const { path, method, op } of operations) {
    const example = op.requestBody?.content['application/json']?.example;
    if (method !== 'POST' || path.includes('{') || path.startsWith('/auth') || example === undefined)
      continue;
    const res = await send('POST', path, 'key', JSON.stringify(localised(example)));
    if (res.statusCode === 200) harvest(kindOf(path), res.json());
  }
  for (const id of known.get('questionnaire') ?? [])
    await send('POST', `/questionnaire/${id}/publish`, 'key');
}
// Runs and deliveries: the outbox and the engine take the seeded events once.
await settle(t);
await listAll();
// Nested resources: deliveries of a webhook, revisions of a questionnaire, the runs' nodes.
for (const id of known.get('webhook') ?? []) {
  const res = await send('GET', `/webhook/${id}/delivery`, 'key');
  if (res.statusCode === 200) harvest('delivery', res.json());
}
for (const id of known.get('questionnaire') ?? []) {
  const res = await send('GET', `/questionnaire/${id}/revision`, 'key');
  if (res.statusCode === 200) harvest('revision', res.json());
}
// The fuzzing principals' own ids stay out of reach: deleting or demoting them only ends the test's
// coverage, and is tested where it belongs.
const own = new Set([key.id, key.userId, session.userId]);
for (const userId of own) {
  const grants = await send('GET', `/user_role?user_id=${userId}`, 'key');
  for (const g of grants.json().user_roles ?? []) own.add(g.id);
}
for (const ids of known.values()) for (const id of own) ids.delete(id);
const knownFor = (param: string, path: string): string[] => {
  if (param === 'delivery_id') return [...(known.get('delivery') ?? [])];
  if (param === 'revision_id') return [...(known.get('revision') ?? [])];
  if (param === 'event_type') return [...(known.get('event_type') ?? [])];
  return [...(known.get(kindOf(path)) ?? [])];
};

afterAll(() => t.close());

interface Request {
  url: string;
  who: 'key' | 'session' | 'none';
  payload?: string;
}

function requestOf(path: string, op: Operation): fc.Arbitrary<Request> {
  const params = op.parameters ?? [];
  const pathParams = Object.fromEntries(
    params.filter((p) => p.in === 'path').map((p) => [p.name, pathValue(knownFor(p.name, path))]),
  );
  const query = Object.fromEntries(
    params.filter((p) => p.in === 'query').map((p) => [p.name, queryValue(p.schema, components)]),
  );
  const content = op.requestBody?.content['application/json'];
  const body: fc.Arbitrary<string | undefined> = content
    ? fc.oneof(
        {
          weight: 8,
          arbitrary: mutatedExample(localised(content.example), components, content.schema).map((v) =>
            JSON.stringify(v),
          ),
        },
        {
          weight: 1,
          arbitrary: fc.constantFrom('{', '{"a":', '[1,]', 'nul', '"\\ud800"', JSON.stringify(deep(200))),
        },
        { weight: 1, arbitrary: fc.constant(undefined) },
      )
    : fc.oneof(
        { weight: 9, arbitrary: fc.constant(undefined) },
        { weight: 1, arbitrary: fc.constant('{"x":1}') },
      );
  return fc
    .record({
      pathParams: fc.record(pathParams),
      query: fc.record(query, { requiredKeys: [] }),
      body,
      who: fc.constantFrom<Request['who']>('key', 'key', 'key', 'session', 'none'),
    })
    .map(({ pathParams: values, query: q, body: payload, who }) => {
      let url = path;
      for (const [name, value] of Object.entries(values))
        url = url.replace(`{${name}}`, segment(value as string));
      const search = new URLSearchParams();
      for (const [name, value] of Object.entries(q))
        for (const v of Array.isArray(value) ? value : [value]) search.append(name, v as string);
      const qs = search.toString();
      return { url: qs ? `${url}?${qs}` : url, who, payload };
    });
}

/** A path segment percent-encoded; a lone surrogate becomes its (invalid) UTF-8 bytes. */
function segment(value: string): string {
  try {
    return encodeURIComponent(value);
  } catch {
    return value.replace(/[\ud800-\udfff]/g, '%ED%A0%80').replace(/[^%\w.~-]/g, (c) => encodeURIComponent(c));
  }
}

/** What is wrong with an answer (empty when it keeps the contract). */
function problems(status: number, text: string): string[] {
  if (status >= 500) return [`answered ${status}: ${text.slice(0, 300)}`];
  if (status < 400) return [];
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text);
  } catch {
    return [`a ${status} whose body is not JSON: ${text.slice(0, 200)}`];
  }
  const out: string[] = [];
  const extra = Object.keys(body).filter((k) => !['code', 'message', 'details'].includes(k));
  if (typeof body.code !== 'string' || typeof body.message !== 'string' || extra.length > 0)
    out.push(`a ${status} not in the error shape: ${text.slice(0, 200)}`);
  const expected = (ERROR_STATUS as Record<string, number>)[body.code as string];
  if (expected !== status)
    out.push(`code ${String(body.code)} answered with ${status} (its status is ${expected})`);
  return out;
}

describe(`fuzz: every operation of the OpenAPI document (${dialectName})`, () => {
  let requests = 0;
  /** Answers by status, and operations that answered 2xx at least once (printed at the end). */
  const statuses = new Map<number, number>();
  const reached = new Set<string>();
  operations.forEach(({ path, method, op }, index) => {
    it(`${method} ${path}`, async () => {
      await fc.assert(
        fc.asyncProperty(requestOf(path, op), async (req) => {
          const res = await send(method, req.url, req.who, req.payload);
          requests++;
          statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
          if (res.statusCode < 300) reached.add(`${method} ${path}`);
          const found = problems(res.statusCode, res.body);
          // An admin session ended by the fuzz itself (logout, a password change): sign in anew.
          if (req.who === 'session' && res.statusCode === 401) session = await admin(t);
          if (found.length > 0)
            throw new Error(
              `${method} ${req.url} as ${req.who}${req.payload ? ` with ${req.payload.slice(0, 300)}` : ''}: ${found.join('; ')}`,
            );
        }),
        { seed: SEED + index, numRuns: RUNS, endOnFailure: true },
      );
    }, 120_000);
  });

  it('the server is still well: /readyz 200, and no request failed in its log', async () => {
    console.log(
      `fuzz: ${requests} requests over ${operations.length} operations; answers by status ${JSON.stringify(Object.fromEntries([...statuses].sort()))}; ${reached.size} operations answered 2xx at least once`,
    );
    const unreached = operations.map((o) => `${o.method} ${o.path}`).filter((o) => !reached.has(o));
    console.log(
      `fuzz: never answered 2xx (records the fuzz could not aim at, or auth flows): ${unreached.join(', ')}`,
    );
    expect(requests).toBeGreaterThan(operations.length * RUNS * 0.9);
    // The fuzz reaches the handlers, not only validation: most operations succeed at least once.
    expect(reached.size).toBeGreaterThan(operations.length * 0.7);
    expect((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    const failed = t.logs.filter((l) => Number(l.level) >= 50);
    expect(failed.map((l) => l.msg)).toEqual([]);
  });
});
