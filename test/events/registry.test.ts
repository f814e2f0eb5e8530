import { Ajv } from 'ajv';
import formats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateCloudEvent } from '../../src/areas/events/cloudevent.js';
import { EVENT_DEFINITIONS, EVENT_SOURCES } from '../../src/areas/events/definitions.js';
import { renderSubject } from '../../src/areas/events/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { principal, type TestPrincipal } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';

// CONTRACTS §6, in its order.
const CONTRACT_TYPES = [
  'svc.user.created',
  'svc.user.updated',
  'svc.user.deleted',
  'svc.user.password.changed',
  'svc.folder.created',
  'svc.folder.updated',
  'svc.folder.deleted',
  'svc.questionnaire.created',
  'svc.questionnaire.updated',
  'svc.questionnaire.published',
  'svc.questionnaire.deleted',
  'svc.questionnaire.restored',
  'svc.questionnaire.archived',
  'svc.submission.created',
  'svc.submission.anonymous_created',
  'svc.submission.updated',
  'svc.submission.deleted',
];
/** Beyond the contract: the pipeline reports on itself (docs/workflows.md "Run events", docs/webhooks.md). */
const PIPELINE_TYPES = [
  'svc.workflow_run.completed',
  'svc.workflow_run.failed',
  'svc.workflow_run.cancelled',
  'svc.event_subscription.paused',
  'svc.webhook.delivery_failed',
];

describe('the event definition registry (CONTRACTS §6)', () => {
  it('holds exactly the 17 contract types and the 5 pipeline types', () => {
    expect(EVENT_DEFINITIONS.map((d) => d.event_type)).toEqual([...CONTRACT_TYPES, ...PIPELINE_TYPES]);
  });

  for (const def of EVENT_DEFINITIONS) {
    it(`${def.event_type}: examples are valid CloudEvents whose data match the schema`, () => {
      // A fresh validator: the schema is checked as the JSON Schema it claims to be, not by our code.
      const ajv = new Ajv({ strict: true, allErrors: true });
      (formats as unknown as { default: (a: Ajv) => void }).default(ajv);
      const validateData = ajv.compile(def.data_schema);
      expect(def.examples.length).toBeGreaterThan(0);
      expect(def.deprecated).toBe(false);
      for (const example of def.examples as Array<Record<string, unknown>>) {
        expect(validateCloudEvent(example)).toMatchObject({ valid: true });
        expect(example).toMatchObject({ type: def.event_type, source: def.source, specversion: '1.0' });
        expect(validateData(example.data), JSON.stringify(validateData.errors)).toBe(true);
        expect(example.subject).toBe(renderSubject(def.subject_template, example.data));
      }
    });

    it(`${def.event_type}: data requires what the contract promises`, () => {
      const area = def.event_type.split('.')[1];
      if (PIPELINE_TYPES.includes(def.event_type)) {
        // The subject is the run, the paused subscription, or the delivery that failed; data names
        // it and its area's ids.
        const [subject, also] = {
          workflow_run: ['workflow_run_id', 'event_subscription_id'],
          event_subscription: ['event_subscription_id', 'reason'],
          webhook: ['delivery_id', 'webhook_id'],
        }[area as 'workflow_run' | 'event_subscription' | 'webhook'];
        expect((def.data_schema as { required: string[] }).required).toEqual(
          expect.arrayContaining([subject, also]),
        );
        expect(def.subject_template).toBe(`{${subject}}`);
        expect(def.source).toBe(EVENT_SOURCES[area as 'workflow_run' | 'event_subscription' | 'webhook']);
        return;
      }
      const required = (def.data_schema as { required: string[] }).required;
      expect(required).toContain(`${area}_id`);
      expect(def.subject_template).toBe(`{${area}_id}`);
      if (area === 'user') expect(required).toContain('email');
      if (area === 'submission') expect(required).toContain('questionnaire_id');
      if (/submission\.(anonymous_)?created$/.test(def.event_type)) expect(required).toContain('answers');
      expect(def.source).toBe(EVENT_SOURCES[area === 'submission' ? 'submission' : (area as 'user')]);
    });
  }
});

describe(`GET /event_definition (${dialectName})`, () => {
  let t: TestApp;
  let reader: TestPrincipal;
  beforeAll(async () => {
    t = await startTestApp();
    reader = await principal(t, ['event_subscription:read']);
  });
  afterAll(() => t.close());

  const get = (query: string, headers = reader.headers) =>
    t.app.inject({ method: 'GET', url: `/api/v1/event_definition${query}`, headers });

  it('lists every definition, sorted by event_type ascending by default', async () => {
    const res = await get('?limit=250');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ total: 22, limit: 250, offset: 0, has_next: false, has_previous: false });
    expect(body.event_definitions.map((d: { event_type: string }) => d.event_type)).toEqual(
      [...CONTRACT_TYPES, ...PIPELINE_TYPES].sort(),
    );
    const created = body.event_definitions.find(
      (d: { event_type: string }) => d.event_type === 'svc.user.created',
    );
    expect(created).toEqual({
      ...JSON.parse(JSON.stringify(EVENT_DEFINITIONS[0])),
      builtin: true,
      created_at: null,
      updated_at: null,
    });
  });

  it('filters by exact event_type, deprecated and search', async () => {
    const exact = (await get('?event_type=svc.user.created')).json();
    expect(exact.event_definitions.map((d: { event_type: string }) => d.event_type)).toEqual([
      'svc.user.created',
    ]);
    expect((await get('?event_type=svc.user')).json().total).toBe(0);
    expect((await get('?deprecated=false')).json().total).toBe(22);
    expect((await get('?deprecated=true')).json().total).toBe(0);
    const search = (await get('?search=PASSWORD')).json();
    expect(search.event_definitions.map((d: { event_type: string }) => d.event_type)).toEqual([
      'svc.user.password.changed',
    ]);
    // search also matches the description
    const byDescription = (await get('?search=api%20key')).json();
    expect(byDescription.event_definitions.map((d: { event_type: string }) => d.event_type)).toEqual([
      'svc.submission.anonymous_created',
    ]);
  });

  it('pages and sorts', async () => {
    const page = (await get('?limit=5&offset=20')).json();
    expect(page).toMatchObject({ total: 22, limit: 5, offset: 20, has_next: false, has_previous: true });
    expect(page.event_definitions).toHaveLength(2);
    const desc = (await get('?sort_by=event_type&sort_dir=desc&limit=2')).json();
    expect(desc.event_definitions.map((d: { event_type: string }) => d.event_type)).toEqual([
      'svc.workflow_run.failed',
      'svc.workflow_run.completed',
    ]);
    expect(desc.has_next).toBe(true);
  });

  it('rejects a bad query with 400', async () => {
    const sort = await get('?sort_by=description');
    expect(sort.statusCode).toBe(400);
    expect(sort.json()).toMatchObject({
      code: 'VALIDATION_ERROR',
      details: { field: 'sort_by', allowed_values: ['event_type', 'schema_version', 'deprecated'] },
    });
    for (const query of [
      '?limit=0',
      '?limit=251',
      '?offset=-1',
      '?deprecated=maybe',
      '?unknown=1',
      '?search=',
    ]) {
      const res = await get(query);
      expect(res.statusCode, query).toBe(400);
      expect(res.json().code).toBe('VALIDATION_ERROR');
    }
  });

  it('needs authentication and event_subscription:read', async () => {
    expect((await get('', {} as never)).statusCode).toBe(401);
    const other = await principal(t, ['webhook:read']);
    const res = await get('', other.headers);
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({
      code: 'AUTH.FORBIDDEN',
      details: { required_scopes: ['event_subscription:read'], mode: 'any' },
    });
  });
});
