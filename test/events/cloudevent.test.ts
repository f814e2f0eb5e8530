import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import formats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { assertCloudEvent, isRfc3339, validateCloudEvent } from '../../src/areas/events/cloudevent.js';

// Public vectors: test/vectors/cloudevents (SOURCES.md there says where each file comes from).
const VECTORS = new URL('../vectors/cloudevents/', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, VECTORS), 'utf8');

interface SpecExample {
  name: string;
  kind: 'event' | 'batch';
  value: unknown;
}
const specExamples = (JSON.parse(read('spec/json-format-examples.json')) as { examples: SpecExample[] })
  .examples;
const events = specExamples.flatMap((e) =>
  e.kind === 'event'
    ? [{ name: e.name, value: e.value as Record<string, unknown> }]
    : (e.value as Record<string, unknown>[]).map((v, i) => ({ name: `${e.name} [${i}]`, value: v })),
);
// SOURCES.md: these examples carry the prose placeholder "... base64 encoded string ..." (shape only).
const isPlaceholder = (v: Record<string, unknown>) =>
  typeof v.data_base64 === 'string' && v.data_base64.includes('base64 encoded string');

// The official JSON Schema of the format (draft-07), to cross-check our verdicts.
const ajv = new Ajv({ strict: false });
(formats as unknown as { default: (a: Ajv) => void }).default(ajv);
const officialSchema = ajv.compile(JSON.parse(read('spec/cloudevents.json')));

describe('CloudEvent validation against the spec examples (cloudevents/spec)', () => {
  it('the vectors hold events, including batch members', () => {
    expect(events.length).toBeGreaterThanOrEqual(8);
    expect(events.filter((e) => isPlaceholder(e.value)).length).toBe(2);
  });

  for (const { name, value } of events) {
    it(`${name}: ${isPlaceholder(value) ? 'rejects the placeholder data_base64' : 'is a valid event'}`, () => {
      const check = validateCloudEvent(value);
      if (isPlaceholder(value)) {
        expect(check.valid).toBe(false);
        expect(check.errors).toEqual([{ attribute: 'data_base64', message: 'must be base64 (RFC 4648)' }]);
      } else {
        expect(check).toEqual({ valid: true, errors: [], event: value });
        // Never more lenient than the official schema.
        expect(officialSchema(value)).toBe(true);
      }
    });
  }

  it('accepts real base64 in data_base64 and rejects data together with data_base64', () => {
    const base = { specversion: '1.0', id: 'x', source: '/s', type: 't' };
    expect(validateCloudEvent({ ...base, data_base64: 'eyAieHl6IjogMTIzIH0=' }).valid).toBe(true);
    const both = validateCloudEvent({ ...base, data: {}, data_base64: 'Zm9vYg==' });
    expect(both.errors).toEqual([
      { attribute: 'data_base64', message: 'must not be present together with data' },
    ]);
  });
});

describe('CloudEvent validation against the conformance suite (cloudevents/conformance)', () => {
  /** Builds the structured-mode event a conformance YAML document describes (all scalars as text). */
  function fromConformance(doc: Record<string, unknown>): Record<string, unknown> {
    const { Extensions, ...attributes } = doc.ContextAttributes as Record<string, unknown>;
    const contentType = String(attributes.datacontenttype ?? 'application/json');
    const text = String(doc.Data ?? '');
    const data = contentType.startsWith('application/json') ? JSON.parse(text) : text;
    return { ...attributes, ...(Extensions as Record<string, unknown> | undefined), data };
  }
  const docs = (file: string) =>
    // The failsafe schema keeps every scalar a string, as the conformance tool reads them (1.0, not 1).
    parseAllDocuments(read(`conformance/${file}`), { schema: 'failsafe' }).map(
      (d) => d.toJS() as Record<string, unknown>,
    );

  it('every v1.0 minimum event is valid', () => {
    const all = docs('v1_minimum.yaml');
    expect(all).toHaveLength(6);
    for (const doc of all) {
      const event = fromConformance(doc);
      expect(validateCloudEvent(event), String(event.id)).toMatchObject({ valid: true });
      expect(officialSchema(event)).toBe(true);
    }
  });

  it('the binary and structured renderings of v1.yaml (with extensions) are valid', () => {
    const all = docs('v1.yaml');
    expect(all.map((d) => d.Mode)).toEqual(['binary', 'structured']);
    for (const doc of all) {
      const event = fromConformance(doc);
      expect(event.comexampleextension1).toBe('value');
      expect(validateCloudEvent(event)).toMatchObject({ valid: true });
    }
  });

  it('the HTTP structured-mode scenario body parses to the attributes the feature expects', () => {
    const feature = read('conformance/http-protocol-binding.feature');
    const scenario = feature.slice(feature.indexOf('Scenario Outline: Structured content mode'));
    const request = scenario.slice(
      scenario.indexOf('"""') + 3,
      scenario.indexOf('"""', scenario.indexOf('"""') + 3),
    );
    const body = request.slice(request.search(/\n\s*\n/)).trim();
    const event = assertCloudEvent(JSON.parse(body));
    const table = scenario.slice(
      scenario.indexOf('Then the attributes are:'),
      scenario.indexOf('And the data'),
    );
    const expected = Object.fromEntries(
      [...table.matchAll(/\|\s*(\w+)\s*\|\s*(\S+)\s*\|/g)]
        .filter((m) => m[1] !== 'key')
        .map((m) => [m[1], m[2]]),
    );
    expect(expected).toHaveProperty('time', '2018-04-05T03:56:24Z');
    for (const [key, value] of Object.entries(expected)) {
      expect((event as unknown as Record<string, unknown>)[key]).toBe(value);
    }
    expect(event.data).toEqual({ message: 'Hello World!' });
  });
});

describe('CloudEvent validation rules', () => {
  const valid = {
    specversion: '1.0',
    id: 'e1',
    source: '/api/v1/user',
    type: 'svc.user.created',
    subject: 'u1',
    time: '2026-01-01T00:00:00.000Z',
    datacontenttype: 'application/json',
    data: { user_id: 'u1' },
  };

  it('accepts the service envelope', () => {
    expect(validateCloudEvent(valid).valid).toBe(true);
  });

  it.each([
    ['id', { id: undefined }, 'is required'],
    ['source', { source: null }, 'is required'],
    ['type', { type: '' }, 'must be a non-empty string'],
    ['specversion', { specversion: undefined }, 'is required'],
    ['specversion', { specversion: '0.3' }, 'must be "1.0", got "0.3"'],
    ['specversion', { specversion: 1 }, 'must be a non-empty string'],
    ['source', { source: 'has spaces in it' }, 'must be a URI-reference (RFC 3986)'],
    ['subject', { subject: '' }, 'must be a non-empty string'],
    ['time', { time: 1_700_000_000 }, 'must be a non-empty string'],
    ['dataschema', { dataschema: 'relative/path' }, 'must be an absolute URI'],
    ['datacontenttype', { datacontenttype: 'json' }, 'must be a media type (RFC 2046)'],
    ['Upper', { Upper: 'x' }, 'extension names are lower-case letters and digits only'],
    ['with_underscore', { with_underscore: 'x' }, 'extension names are lower-case letters and digits only'],
    ['ext', { ext: { nested: true } }, 'extension values are strings, booleans or 32-bit integers'],
    ['ext', { ext: 1.5 }, 'extension values are strings, booleans or 32-bit integers'],
    ['ext', { ext: 2 ** 31 }, 'extension values are strings, booleans or 32-bit integers'],
  ])('rejects a bad %s', (attribute, change, message) => {
    const event = { ...valid, ...change } as Record<string, unknown>;
    for (const [k, v] of Object.entries(change)) if (v === undefined) delete event[k];
    const check = validateCloudEvent(event);
    expect(check.valid).toBe(false);
    expect(check.errors).toContainEqual({ attribute, message });
  });

  it('treats null optional attributes and extensions as unset', () => {
    expect(validateCloudEvent({ ...valid, subject: null, time: null, ext: null }).valid).toBe(true);
  });

  it('rejects what is not an object', () => {
    for (const value of [null, [], 'event', 42]) {
      expect(validateCloudEvent(value).errors).toEqual([
        { attribute: '(event)', message: 'must be a JSON object' },
      ]);
    }
  });

  it('assertCloudEvent throws EVENT.INVALID naming every fault', () => {
    expect(() => assertCloudEvent({ ...valid, id: '', time: 'yesterday' })).toThrowError(
      expect.objectContaining({
        code: 'EVENT.INVALID',
        status: 400,
        message: 'Invalid CloudEvent: id must be a non-empty string',
        details: {
          errors: [
            { attribute: 'id', message: 'must be a non-empty string' },
            { attribute: 'time', message: 'must be an RFC 3339 timestamp, e.g. 2018-04-05T17:31:00Z' },
          ],
        },
      }),
    );
  });
});

describe('RFC 3339 timestamps', () => {
  it.each([
    '2018-04-05T17:31:00Z',
    '2018-04-05T17:31:00.123456Z',
    '2018-04-05t17:31:00z',
    '2018-04-05T17:31:00+05:30',
    '2018-04-05T17:31:00-00:00',
    '2024-02-29T00:00:00Z',
    '2016-12-31T23:59:60Z',
  ])('accepts %s', (value) => {
    expect(isRfc3339(value)).toBe(true);
  });

  it.each([
    '2018-04-05 17:31:00Z',
    '2018-04-05T17:31:00',
    '2018-04-05',
    '2018-4-5T17:31:00Z',
    '2018-13-05T17:31:00Z',
    '2018-02-29T00:00:00Z',
    '2100-02-29T00:00:00Z',
    '2018-04-31T00:00:00Z',
    '2018-04-05T24:00:00Z',
    '2018-04-05T17:60:00Z',
    '2018-04-05T17:31:61Z',
    '2018-04-05T17:31:00+24:00',
    '2018-04-05T17:31:00+0530',
    '2018-04-05T17:31:00.Z',
  ])('rejects %s', (value) => {
    expect(isRfc3339(value)).toBe(false);
  });
});
