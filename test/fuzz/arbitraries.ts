import fc from 'fast-check';

/**
 * fast-check arbitraries derived from the OpenAPI document's JSON Schemas (#21 item 4), each mixed
 * with hostile values: most requests are valid-looking and reach the handlers, the rest probe the
 * edges (wrong types, huge, deep, unicode, NUL, prototype keys, SQL, JSONLogic and path tricks).
 */

// biome-ignore lint/suspicious/noExplicitAny: JSON Schemas are walked generically
export type Schema = Record<string, any>;
export type Components = Record<string, Schema>;

/** Strings that have broken services of the kind: each must be answered with a 4xx or accepted. */
export const HOSTILE_STRINGS = [
  '',
  ' ',
  'A'.repeat(70_000),
  '\u0000',
  'a\u0000b',
  '\ud800',
  '\uffff',
  '\u202e\u0644\u0627 RTL',
  '𝕊𝕧𝕔 😀 ✓ ü',
  'Ω'.repeat(300),
  "' OR 1=1 --",
  "'; DROP TABLE folder; --",
  '" OR ""="',
  '$1',
  '%',
  '_',
  '\\',
  '../../../../etc/passwd',
  '..%2f..%2fetc%2fpasswd',
  '/api/v1/user',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  '{"var":"__proto__"}',
  '{{7*7}}',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template injection probe, on purpose
  '${7*7}',
  '<script>alert(1)</script>',
  'javascript:alert(1)',
  'file:///etc/passwd',
  'http://169.254.169.254/latest/meta-data/',
  'http://127.0.0.1:1/',
  'https://example.test/hook',
  'svc.user.created',
  'com.example.type',
  '2026-02-30T00:00:00Z',
  '9999-12-31T23:59:59.999Z',
  '-1',
  '1e309',
  'NaN',
  'null',
  'true',
  '00000000-0000-0000-0000-000000000000',
  'x@example.test',
];

/** JSONLogic and structure that evaluators and JSON handlers must survive. */
const HOSTILE_JSON: unknown[] = [
  null,
  true,
  -1,
  0,
  2 ** 53 + 1,
  -(2 ** 31),
  1.5e308,
  [],
  {},
  { var: '__proto__' },
  { var: 'constructor.prototype' },
  { '==': [{ var: 'a' }, { var: ['b', { var: 'c' }] }] },
  { reduce: [{ var: 'x' }, { '+': [{ var: 'current' }, { var: 'accumulator' }] }, 0] },
  { map: [[1, 2, 3], { '*': [{ var: '' }, 1e300] }] },
  { unknown_operator: [1] },
  { preserve: { __proto__: 1 } },
  Array.from({ length: 2_000 }, (_, i) => i),
  deep(40),
];

/** An object nested `levels` deep (the server refuses bodies over 128 levels). */
export function deep(levels: number): unknown {
  let v: unknown = 'bottom';
  for (let i = 0; i < levels; i++) v = { a: v };
  return v;
}

/** An object with an own property named `key` (an object literal would set the prototype instead). */
function withOwn(base: Record<string, unknown>, key: string, value: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  Object.defineProperty(out, key, { value, enumerable: true, configurable: true, writable: true });
  return out;
}

const hostileString = fc.constantFrom(...HOSTILE_STRINGS);
const anyJson = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_JSON) },
  { weight: 2, arbitrary: hostileString },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
);

function resolve(schema: Schema, components: Components): Schema {
  let s = schema;
  for (let i = 0; i < 10 && typeof s.$ref === 'string'; i++) {
    const name = s.$ref.replace(/^#\/components\/schemas\//, '');
    s = components[name] ?? {};
  }
  return s;
}

function stringFor(s: Schema): fc.Arbitrary<string> {
  const min = s.minLength ?? 0;
  const max = Math.min(s.maxLength ?? 40, 64);
  switch (s.format) {
    case 'uuid':
      return fc.uuid();
    case 'date-time':
      return fc
        .date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true })
        .map((d) => d.toISOString());
    case 'date':
      return fc
        .date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true })
        .map((d) => d.toISOString().slice(0, 10));
    case 'email':
      return fc.emailAddress();
    case 'uri':
    case 'url':
      return fc.constantFrom(
        'https://example.test/hook',
        'https://hooks.example.test/a?b=c',
        'http://127.0.0.1:9/x',
        'https://[::1]/',
        'https://user:pw@example.test/',
      );
    default:
      return fc.string({ minLength: Math.min(min, max), maxLength: Math.max(min, max), unit: 'grapheme' });
  }
}

/**
 * A value for `schema`: mostly what it describes (so requests get past validation), sometimes a
 * hostile value instead (weight `hostile` of 10).
 */
export function arbitraryFor(
  schema: Schema | undefined,
  components: Components,
  depth = 0,
  hostile = 1,
): fc.Arbitrary<unknown> {
  const fitting = fitted(schema ? resolve(schema, components) : {}, components, depth);
  if (hostile === 0) return fitting;
  return fc.oneof({ weight: 10 - hostile, arbitrary: fitting }, { weight: hostile, arbitrary: anyJson });
}

function fitted(s: Schema, components: Components, depth: number): fc.Arbitrary<unknown> {
  if (depth > 6) return fc.constant(null);
  if (s.const !== undefined) return fc.constant(s.const);
  if (Array.isArray(s.enum) && s.enum.length > 0) return fc.constantFrom(...s.enum);
  for (const key of ['anyOf', 'oneOf'] as const)
    if (Array.isArray(s[key]) && s[key].length > 0)
      return fc.oneof(...s[key].map((x: Schema) => arbitraryFor(x, components, depth + 1, 0)));
  if (Array.isArray(s.allOf) && s.allOf.length > 0) {
    const merged: Schema = { type: 'object', properties: {}, required: [] };
    for (const part of s.allOf.map((x: Schema) => resolve(x, components))) {
      Object.assign(merged.properties, part.properties ?? {});
      merged.required.push(...(part.required ?? []));
    }
    return fitted(merged, components, depth);
  }
  const type = Array.isArray(s.type) ? s.type : s.type ? [s.type] : undefined;
  if (type && type.length > 1)
    return fc.oneof(...type.map((t: string) => fitted({ ...s, type: t }, components, depth)));
  switch (type?.[0]) {
    case 'string':
      return stringFor(s);
    case 'integer':
      return fc.integer({ min: s.minimum ?? -1_000, max: s.maximum ?? 1_000_000 });
    case 'number':
      return fc.double({
        min: s.minimum ?? -1e6,
        max: s.maximum ?? 1e6,
        noNaN: true,
        noDefaultInfinity: true,
      });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(arbitraryFor(s.items, components, depth + 1), {
        minLength: s.minItems ?? 0,
        maxLength: Math.max(s.minItems ?? 0, Math.min(s.maxItems ?? 3, 3)),
      });
    case 'object':
      return objectFor(s, components, depth);
    default:
      return s.properties ? objectFor(s, components, depth) : anyJson;
  }
}

function objectFor(s: Schema, components: Components, depth: number): fc.Arbitrary<unknown> {
  const properties: Record<string, Schema> = s.properties ?? {};
  const required = new Set<string>(s.required ?? []);
  const shape: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [key, prop] of Object.entries(properties))
    shape[key] = arbitraryFor(prop, components, depth + 1);
  const base = fc.record(shape, { requiredKeys: Object.keys(shape).filter((k) => required.has(k)) });
  // Sometimes an extra key: a prototype key, or a random one.
  return fc
    .tuple(
      base,
      fc.option(fc.tuple(fc.constantFrom('__proto__', 'constructor', 'prototype', 'zz_extra'), anyJson), {
        freq: 4,
      }),
    )
    .map(([obj, extra]) => (extra ? withOwn(obj as Record<string, unknown>, extra[0], extra[1]) : obj));
}

/** The documented example with one field (or the whole body) replaced: reaches deeper than random. */
export function mutatedExample(
  example: unknown,
  components: Components,
  schema: Schema | undefined,
): fc.Arbitrary<unknown> {
  if (example === null || typeof example !== 'object' || Array.isArray(example))
    return arbitraryFor(schema, components);
  const keys = Object.keys(example as object);
  if (keys.length === 0) return fc.constant(example);
  return fc.oneof(
    fc.constant(example),
    fc
      .tuple(fc.constantFrom(...keys), anyJson)
      .map(([k, v]) => withOwn(example as Record<string, unknown>, k, v)),
    fc.constantFrom(...keys).map((k) => {
      const { [k]: _dropped, ...rest } = example as Record<string, unknown>;
      return rest;
    }),
  );
}

/** A path segment: a known id of the right kind, a random UUID, or a hostile string. */
export function pathValue(known: string[]): fc.Arbitrary<string> {
  const parts: Array<{ weight: number; arbitrary: fc.Arbitrary<string> }> = [
    { weight: 2, arbitrary: fc.uuid() },
    { weight: 2, arbitrary: hostileString.filter((x) => x.length < 2_000) },
  ];
  if (known.length > 0) parts.push({ weight: 6, arbitrary: fc.constantFrom(...known) });
  return fc.oneof(...parts);
}

/** A query value: what the schema describes (as text), or a hostile string. */
export function queryValue(
  schema: Schema | undefined,
  components: Components,
): fc.Arbitrary<string | string[]> {
  const s = schema ? resolve(schema, components) : {};
  const text = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));
  if (s.type === 'array')
    return fc.array(arbitraryFor(s.items, components, 1, 2).map(text), { minLength: 1, maxLength: 3 });
  return arbitraryFor(s, components, 1, 2).map(text);
}
