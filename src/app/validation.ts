import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import formats from 'ajv-formats';
import type { FastifySchemaValidationError } from 'fastify/types/schema.js';

/**
 * Two validators. Bodies are checked as sent: no coercion, no removal of unknown fields (an unknown
 * field is a 400, docs/errors.md "Errors"). Query strings, params and headers arrive as text, so those coerce.
 */
function makeAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({
    coerceTypes: coerce ? 'array' : false,
    useDefaults: true,
    removeAdditional: false,
    allErrors: false,
    strict: false,
  });
  // ajv-formats is CommonJS: its default export is the function under ESM interop.
  (formats as unknown as { default: (a: Ajv) => void }).default(ajv);
  // RFC 3339 allows a leap second (23:59:60), which no JavaScript Date can hold: the value would pass
  // here and fail later as a 500. A date-time must also be a time the service can compute with.
  const rfc3339 = ajv.formats['date-time'] as { validate: (s: string) => boolean; compare: unknown };
  ajv.addFormat('date-time', {
    type: 'string',
    validate: (s: string) => rfc3339.validate(s) && !Number.isNaN(Date.parse(s)),
    compare: rfc3339.compare as (a: string, b: string) => number,
  });
  return ajv;
}

const bodyAjv = makeAjv(false);
const textAjv = makeAjv(true);

/**
 * Compiled on a route's first request, not at start: an idle process holds no code for the hundreds
 * of validators it has not used (docs/performance.md, "Memory"). Fastify reads `.errors` after a call.
 */
export function compileValidator({ schema, httpPart }: { schema: object; httpPart?: string }) {
  let compiled: ValidateFunction | undefined;
  const validate = (data: unknown): boolean => {
    compiled ??= (httpPart === 'body' ? bodyAjv : textAjv).compile(schema);
    const ok = compiled(data) as boolean;
    validate.errors = compiled.errors;
    return ok;
  };
  validate.errors = null as ValidateFunction['errors'];
  return validate;
}

/** Turns a schema failure into the contract's details: the field, what is allowed, what went wrong. */
export function validationDetails(
  errors: ReadonlyArray<FastifySchemaValidationError | ErrorObject>,
  part: string | undefined,
): { message: string; details: Record<string, unknown> } {
  const e = errors[0] as ErrorObject;
  const path = (e.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.');
  const params = (e.params ?? {}) as Record<string, unknown>;
  let field = path;
  if (e.keyword === 'required') field = [path, params.missingProperty].filter(Boolean).join('.');
  if (e.keyword === 'additionalProperties')
    field = [path, params.additionalProperty].filter(Boolean).join('.');
  const details: Record<string, unknown> = { field: field || part || 'body', in: part ?? 'body' };
  let message: string;
  if (e.keyword === 'required') message = `${details.field} is required`;
  else if (e.keyword === 'additionalProperties') message = `${details.field} is not a known field`;
  else message = `${details.field} ${e.message ?? 'is invalid'}`;
  // A closed set of values (an enum, or a union of literals like sort_by) names what is allowed.
  const allowed = allowedValues(errors as ErrorObject[], e.instancePath);
  if (allowed) {
    details.allowed_values = allowed;
    message = `${details.field} must be one of: ${allowed.join(', ')}`;
  }
  return { message, details };
}

function allowedValues(errors: ErrorObject[], instancePath: string): string[] | undefined {
  const values: string[] = [];
  for (const err of errors) {
    if (err.instancePath !== instancePath) continue;
    if (err.keyword === 'enum')
      values.push(...(err.params as { allowedValues: unknown[] }).allowedValues.map(String));
    if (err.keyword === 'const') values.push(String((err.params as { allowedValue: unknown }).allowedValue));
  }
  return values.length > 0 ? [...new Set(values)] : undefined;
}

type SerializerFactory = ReturnType<typeof SerializerSelector>;
const buildSerializer = SerializerSelector();

/** Fastify's own serializer compiler, deferred like the validators: built on a response's first use. */
export const lazySerializers: SerializerFactory = (externalSchemas, options) => {
  const compile = buildSerializer(externalSchemas, options);
  return (route) => {
    let serialize: ((data: unknown) => string) | undefined;
    return (data: unknown) => {
      serialize ??= compile(route);
      return serialize(data);
    };
  };
};
