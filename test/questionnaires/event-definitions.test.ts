import { Ajv } from 'ajv';
import formats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import { type Api, api, events, type Json, ok, tickingClock } from './helpers.js';

/**
 * The registry's word on the questionnaire events matches what is emitted: `svc.questionnaire.created`
 * comes from a create (operation EDIT) and from a fork (operation FORK, with forked_from_id).
 */
describe(`questionnaire event definitions (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;
  beforeAll(async () => {
    t = await startTestApp({ clock: tickingClock() });
    a = api(t, (await admin(t)).headers);
  });
  afterAll(() => t.close());

  const definition = async (type: string) => {
    const res = ok(await a.get(`/event_definition?event_type=${type}`));
    expect(res.total).toBe(1);
    return res.event_definitions[0];
  };

  it('svc.questionnaire.created describes both EDIT and FORK, and both events match its schema', async () => {
    const def = await definition('svc.questionnaire.created');
    expect(def.description).toMatch(/FORK/);
    expect(def.data_schema.properties.operation.enum).toEqual(['EDIT', 'FORK']);
    expect(def.data_schema.properties.forked_from_id).toMatchObject({ type: 'string' });
    expect(def.examples.map((e: Json) => e.data.operation)).toEqual(['EDIT', 'FORK']);
    expect(def.examples[1].data).toMatchObject({ forked_from_id: expect.any(String) });

    const source = ok(await a.post('/questionnaire', { name: 'PHQ-9' }));
    const fork = ok(await a.post(`/questionnaire/${source.id}/fork`, { name: 'PHQ-9 v2' }));
    const emitted = (await events(t, 'svc.questionnaire.created')).filter((e) =>
      [source.id, fork.id].includes(e.subject),
    );
    expect(emitted.map((e) => e.data.operation)).toEqual(['EDIT', 'FORK']);
    expect(emitted[1].data).toMatchObject({ forked_from_id: source.id, lineage_root_id: source.id });
    expect(emitted[0].data.forked_from_id).toBeUndefined();

    const ajv = new Ajv({ strict: true, allErrors: true });
    (formats as unknown as { default: (a: Ajv) => void }).default(ajv);
    const validate = ajv.compile(def.data_schema);
    for (const e of emitted) expect(validate(e.data), JSON.stringify(validate.errors)).toBe(true);
    // An operation the definition does not name is refused by its schema.
    expect(validate({ ...emitted[0].data, operation: 'PUBLISH' })).toBe(false);
  });

  it('each other questionnaire event names its own operations', async () => {
    const expected: Record<string, string[]> = {
      'svc.questionnaire.updated': ['EDIT', 'METADATA_EDIT'],
      'svc.questionnaire.published': ['PUBLISH'],
      'svc.questionnaire.archived': ['ARCHIVE'],
      'svc.questionnaire.deleted': ['DELETE'],
      'svc.questionnaire.restored': ['RESTORE'],
    };
    for (const [type, operations] of Object.entries(expected)) {
      const def = await definition(type);
      expect(def.data_schema.properties.operation.enum, type).toEqual(operations);
    }
    expect((await definition('svc.questionnaire.deleted')).data_schema.properties.deleted_at).toBeDefined();
  });
});
