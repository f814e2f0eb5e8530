import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { AppError } from '../../http/errors.js';
import { isPlainObject } from '../../lib/objects.js';
import { REFERENCE_PATTERN } from '../vault/references.js';

/**
 * JSON Schema (2020-12) validation of plugin configs, inputs and outputs, with ajv.
 * Plugin schemas come from manifests we do not control, so: no strict mode (unknown keywords are
 * annotations), no defaults or coercion (the data is checked, never changed), and schemas with an
 * `$id` are not registered globally (two plugins may reuse one).
 */
const ajv = new Ajv2020({
  strict: false,
  allErrors: true,
  addUsedSchema: false,
  validateFormats: true,
  // An unknown format is ignored (not strict); ajv would say so on the console, which is not our log.
  logger: false,
});
// ajv-formats is CommonJS: its default export is the function under ESM interop.
(formats as unknown as { default: (a: Ajv2020) => void }).default(ajv);

export interface SchemaError {
  /** JSON Pointer into the validated value ('' is the value itself). */
  path: string;
  message: string;
}

interface Compiled {
  validate: ValidateFunction;
  /** Schema paths of the wrappers added by `allowReferences`, whose own failures are noise. */
  wrappers: string[];
}

/** Compiled validators by schema text: definitions change only at start-up, so this stays small. */
const cache = new Map<string, Compiled>();
const CACHE_LIMIT = 1000;

/** Throws when `schema` is not a usable JSON Schema (checked at discovery). */
export function assertValidSchema(schema: unknown): void {
  ajv.compile(schema as object);
  ajv.compile(allowReferences(schema).schema as object);
}

/**
 * Validates `data` against `schema`. With `references`, a vault reference string is accepted wherever
 * the schema describes a string (docs/plugins.md, "Vault references in config_json").
 */
export function validate(schema: unknown, data: unknown, opts: { references?: boolean } = {}): SchemaError[] {
  const compiled = compile(schema, opts.references === true);
  if (compiled.validate(data)) return [];
  const errors = (compiled.validate.errors ?? []).filter((e) => !isWrapperNoise(e, compiled.wrappers));
  return dedupe(errors.map(toSchemaError)).slice(0, 20);
}

/** An instance's config against its definition's instance_config_schema (400 PLUGIN.INVALID_CONFIG). */
export function checkConfig(
  schema: unknown,
  config: Record<string, unknown> | null | undefined,
  what: string,
) {
  const errors = validate(schema, config ?? {}, { references: true });
  if (errors.length > 0) {
    throw new AppError(
      'PLUGIN.INVALID_CONFIG',
      `${what} does not match the plugin's instance_config_schema: ${describeErrors(errors)}`,
      { errors },
    );
  }
}

/**
 * The check an invocation of action `label` makes of its input, for a simulation: vault references
 * are left unresolved there, so one is accepted wherever a string is. Answers the error the
 * invocation would throw (`PLUGIN.INVALID_INPUT: ...`), or undefined.
 */
export function inputChecker(label: string, inputSchema: unknown): (input: unknown) => string | undefined {
  return (input) => {
    const errors = validate(inputSchema, input === undefined ? {} : input, { references: true });
    return errors.length === 0
      ? undefined
      : `PLUGIN.INVALID_INPUT: payload does not match the input_schema of ${label}: ${describeErrors(errors)}`;
  };
}

/** `errors` as one readable line: "/port must be integer; /host is required". */
export function describeErrors(errors: SchemaError[]): string {
  return errors.map((e) => `${e.path || '(root)'} ${e.message}`).join('; ');
}

/** The same schema object again (callers cache parsed definitions) skips even the cache key. */
const byObject = new WeakMap<object, { r?: Compiled; p?: Compiled }>();

function compile(schema: unknown, references: boolean): Compiled {
  const mode = references ? 'r' : 'p';
  const holder = typeof schema === 'object' && schema !== null ? schema : undefined;
  const known = holder ? byObject.get(holder)?.[mode] : undefined;
  if (known) return known;
  const key = `${mode}:${JSON.stringify(schema)}`;
  let compiled = cache.get(key);
  if (!compiled) {
    const { schema: effective, wrappers } = references
      ? allowReferences(schema)
      : { schema: schema as object, wrappers: [] };
    compiled = { validate: ajv.compile(effective as object), wrappers };
    if (cache.size >= CACHE_LIMIT) cache.clear();
    cache.set(key, compiled);
  }
  if (holder) byObject.set(holder, { ...byObject.get(holder), [mode]: compiled });
  return compiled;
}

function toSchemaError(e: ErrorObject): SchemaError {
  if (e.keyword === 'required') {
    const missing = (e.params as { missingProperty: string }).missingProperty;
    return { path: `${e.instancePath}/${missing}`, message: 'is required' };
  }
  if (e.keyword === 'additionalProperties') {
    const extra = (e.params as { additionalProperty: string }).additionalProperty;
    return { path: `${e.instancePath}/${extra}`, message: 'is not an allowed property' };
  }
  if (e.keyword === 'enum') {
    const allowed = (e.params as { allowedValues: unknown[] }).allowedValues;
    return {
      path: e.instancePath,
      message: `must be one of: ${allowed.map((v) => JSON.stringify(v)).join(', ')}`,
    };
  }
  return { path: e.instancePath, message: e.message ?? 'is invalid' };
}

function dedupe(errors: SchemaError[]): SchemaError[] {
  const seen = new Set<string>();
  return errors.filter((e) => {
    const k = `${e.path}\u0000${e.message}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/** The reference branch of a wrapper failing, or the wrapper's anyOf itself, says nothing useful. */
function isWrapperNoise(e: ErrorObject, wrappers: string[]): boolean {
  return wrappers.some((w) => e.schemaPath === `#${w}/anyOf` || e.schemaPath.startsWith(`#${w}/anyOf/1/`));
}

type Json = Record<string, unknown>;

/** Keywords whose value is one subschema, a map of subschemas, or an array of subschemas. */
const ONE = ['additionalProperties', 'items', 'contains', 'not', 'if', 'then', 'else'];
const ONE_MORE = ['unevaluatedProperties', 'unevaluatedItems', 'additionalItems'];
const MAP = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];
const ARRAY = ['allOf', 'prefixItems'];
const ALTERNATIVES = ['anyOf', 'oneOf'];
/** Keywords that only constrain strings: a schema using one expects a string there. */
const STRING_KEYWORDS = [
  'pattern',
  'format',
  'minLength',
  'maxLength',
  'contentEncoding',
  'contentMediaType',
];
/** Identity keywords stay on the outside of a wrapper so `$ref`s to them keep working. */
const IDENTITY = ['$id', '$anchor', '$dynamicAnchor', '$schema', '$defs', 'definitions'];

function describesString(s: Json): boolean {
  const type = s.type;
  if (type === 'string' || (Array.isArray(type) && type.includes('string'))) return true;
  if (type !== undefined) return false;
  if (STRING_KEYWORDS.some((k) => k in s)) return true;
  if (Array.isArray(s.enum) && s.enum.some((v) => typeof v === 'string')) return true;
  return typeof s.const === 'string';
}

/** Does `s` accept some string, directly or through one of its alternatives? */
function takesString(s: Json): boolean {
  if (describesString(s)) return true;
  return ALTERNATIVES.some(
    (k) => Array.isArray(s[k]) && (s[k] as unknown[]).some((sub) => isPlainObject(sub) && takesString(sub)),
  );
}

/**
 * A copy of `schema` in which every subschema that describes a string also accepts a vault reference:
 * `S` becomes `{anyOf: [S, {type: string, pattern: REFERENCE}]}`. Alternatives (`anyOf`/`oneOf`) are
 * wrapped as a whole, so a reference matching two string branches does not fail `oneOf`.
 */
export function allowReferences(schema: unknown): { schema: unknown; wrappers: string[] } {
  const wrappers: string[] = [];

  const walk = (s: unknown, path: string, wrapSelf: boolean): unknown => {
    if (!isPlainObject(s)) return s;
    const alternatives = ALTERNATIVES.filter((k) => Array.isArray(s[k]));
    const wrap = wrapSelf && takesString(s);
    // Once wrapped, what is not identity moves under /anyOf/0: children's schema paths follow it.
    const base = wrap ? `${path}/anyOf/0` : path;
    const at = (k: string) => (IDENTITY.includes(k) ? path : base);
    const out: Json = { ...s };
    for (const k of [...ONE, ...ONE_MORE]) if (k in s) out[k] = walk(s[k], `${at(k)}/${k}`, true);
    for (const k of MAP) {
      if (!isPlainObject(s[k])) continue;
      const map: Json = {};
      for (const [name, sub] of Object.entries(s[k] as Json)) {
        map[name] = walk(sub, `${at(k)}/${k}/${escapePointer(name)}`, true);
      }
      out[k] = map;
    }
    for (const k of ARRAY) {
      if (Array.isArray(s[k]))
        out[k] = (s[k] as unknown[]).map((sub, i) => walk(sub, `${base}/${k}/${i}`, true));
    }
    for (const k of alternatives) {
      out[k] = (s[k] as unknown[]).map((sub, i) => walk(sub, `${base}/${k}/${i}`, false));
    }
    if (!wrap) return out;
    wrappers.push(path);
    const outer: Json = {};
    const inner: Json = {};
    for (const [k, v] of Object.entries(out)) (IDENTITY.includes(k) ? outer : inner)[k] = v;
    outer.anyOf = [inner, { type: 'string', pattern: REFERENCE_PATTERN }];
    return outer;
  };

  return { schema: walk(schema, '', true), wrappers };
}

function escapePointer(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}
