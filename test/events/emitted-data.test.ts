import { Ajv } from 'ajv';
import formats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CloudEventJson, call, questionnaire } from '../enrollments/fixtures.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, apiKey, responder, type TestPrincipal } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import { settle } from '../workflows/helpers.js';

/**
 * The registry documents what is really emitted: every area's actions run through HTTP, then every
 * event in the outbox must validate against its definition's data schema with no undeclared field
 * (a subscriber reads the registry to know what `data` holds, and `available_paths` comes from it).
 */
describe(`emitted events match their definitions (${dialectName})`, () => {
  let t: TestApp;
  let boss: TestPrincipal;
  beforeAll(async () => {
    t = await startTestApp({
      env: { SVC_ALLOW_PRIVATE_NETWORKS: 'true', SVC_WEBHOOK_BACKOFF_BASE_SECONDS: '0' },
    });
    boss = await admin(t);
  });
  afterAll(() => t.close());

  const ok = async (
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    path: string,
    body?: unknown,
    who: { headers: object } = boss,
  ) => {
    const res = await call(t, who as TestPrincipal, method, path, body);
    expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBe(200);
    return res.body;
  };

  it('every event of every area validates against its schema, with no undeclared data field', async () => {
    // The pipeline's own events: runs that complete (someone names .completed), fail and are
    // cancelled, a subscription paused, and a webhook delivery that fails for good (nothing listens
    // on port 9).
    const graph = async (event_type: string, nodes: unknown[]) => {
      const s = await ok('POST', '/event_subscription', { name: event_type, event_type });
      await ok('PUT', `/event_subscription/${s.id}/graph`, { nodes, edges: [] });
    };
    await graph('svc.workflow_run.completed', [{ key: 'noted', type: 'END' }]);
    await graph('svc.folder.created', [{ key: 'fine', type: 'COMPUTE', config: { logic: 1 } }]);
    await graph('svc.folder.deleted', [
      { key: 'bad', type: 'COMPUTE', config: { logic: { '/': [1, { var: 'event.data.folder_id' }] } } },
    ]);
    await graph('svc.user.deleted', [{ key: 'wait', type: 'DELAY', config: { delay_ms: 3_600_000 } }]);
    // A subscription the rate guard pauses (three questionnaires are created below).
    const guarded = await ok('POST', '/event_subscription', {
      name: 'guarded',
      event_type: 'svc.questionnaire.created',
      max_runs_per_minute: 1,
    });
    await ok('PUT', `/event_subscription/${guarded.id}/graph`, {
      nodes: [{ key: 'end', type: 'END' }],
      edges: [],
    });
    await ok('POST', '/webhook', {
      name: 'down',
      url: 'http://127.0.0.1:9/hook',
      event_types: ['svc.user.created'],
    });

    // Users: created, updated, password changed, deleted.
    const user = await ok('POST', '/user', { email: 'emitted@example.test', password: 'a-long-password-1' });
    await ok('PATCH', `/user/${user.id}`, { name: 'Emitted' });
    const self = await responder(t);
    await ok(
      'POST',
      '/user/change_password',
      { current_password: self.password, new_password: 'another-long-password-2' },
      self,
    );
    await ok('DELETE', `/user/${user.id}`);

    // Folders: created, renamed, moved, deleted.
    const parent = await ok('POST', '/folder', { name: 'Parent' });
    const folder = await ok('POST', '/folder', { name: 'Child' });
    await ok('PATCH', `/folder/${folder.id}`, { name: 'Child renamed' });
    await ok('PATCH', `/folder/${folder.id}`, { parent_id: parent.id });
    await ok('DELETE', `/folder/${folder.id}`);

    // Questionnaires: created, updated, published, forked, archived, deleted, restored.
    const q = await questionnaire(t, boss, { status: 'PUBLISHED' });
    await ok('POST', `/questionnaire/${q.id}/fork`, { name: 'Fork' });
    const other = await questionnaire(t, boss);
    await ok('PATCH', `/questionnaire/${other.id}`, { name: 'Renamed' });
    await ok('POST', `/questionnaire/${other.id}/archive`);
    await ok('DELETE', `/questionnaire/${other.id}`);
    await ok('POST', `/questionnaire/${other.id}/restore`);

    // Submissions: created, anonymous, updated, deleted.
    const submitter = await responder(t);
    const sub = await ok(
      'POST',
      '/questionnaire_submission',
      { questionnaire_id: q.id, answers: { q1: 1 } },
      submitter,
    );
    const key = await apiKey(t, []);
    await ok(
      'POST',
      '/questionnaire_submission/anonymous',
      { questionnaire_id: q.id, answers: { q1: 2 } },
      key,
    );
    await ok('PATCH', `/questionnaire_submission/${sub.id}`, { answers: { q1: 3 } });
    await ok('DELETE', `/questionnaire_submission/${sub.id}`);

    await settle(t);
    for (let i = 0; i < 5; i++) await t.ctx.services.webhookEngine.deliverDue();
    const [waiting] = (await ok('GET', '/workflow_run?status=running')).runs;
    await ok('POST', `/workflow_run/${waiting.id}/cancel`);

    const rows = await t.ctx.store.db.selectFrom('event_delivery_task').select(['cloudevent']).execute();
    const emitted = new Map<string, CloudEventJson>();
    for (const r of rows) {
      const e = JSON.parse(r.cloudevent) as CloudEventJson;
      emitted.set(e.id, e);
    }
    const defs = (await ok('GET', '/event_definition?limit=250')).event_definitions as CloudEventJson[];
    const ajv = new Ajv({ strict: true, allErrors: true });
    (formats as unknown as { default: (a: Ajv) => void }).default(ajv);
    const validators = new Map(
      defs.map((d) => [d.event_type, ajv.compile({ ...d.data_schema, additionalProperties: false })]),
    );
    const seen = new Set<string>();
    for (const e of emitted.values()) {
      const validate = validators.get(e.type);
      expect(validate, `${e.type} has a definition`).toBeDefined();
      expect(validate?.(e.data), `${e.type}: ${JSON.stringify(validate?.errors)}`).toBe(true);
      seen.add(e.type);
    }
    // Every one of the 17 contract types and the 5 pipeline types was exercised, a folder move included.
    expect([...seen].sort()).toEqual(defs.map((d) => d.event_type).sort());
    const moves = [...emitted.values()].filter(
      (e) => e.type === 'svc.folder.updated' && 'previous_parent_id' in e.data,
    );
    expect(moves).toHaveLength(1);
  });
});
