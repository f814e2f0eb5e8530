import { isPlainObject } from '../../lib/objects.js';
import { isExpression } from './jsonlogic.js';

/** A mismatch between an input mapping and the action's input_schema, found before any run. */
export interface MappingProblem {
  /** Dot path inside the mapping (`url`, `headers.accept`). */
  path: string;
  message: string;
}

type Schema = Readonly<Record<string, unknown>>;

/** The JSON Schema type names a literal value satisfies. */
function typesOf(value: unknown): string[] {
  if (value === null) return ['null'];
  if (Array.isArray(value)) return ['array'];
  if (typeof value === 'number') return Number.isInteger(value) ? ['integer', 'number'] : ['number'];
  return [typeof value];
}

/**
 * Checks an ACTION's input mapping against its action's input_schema at save time
 * (docs/workflows.md "Save-time checks"): required properties that are missing, fields the schema
 * does not take, and literal values whose type or enum the schema does not allow. A value given by an expression is accepted, since its type
 * is known only when the run evaluates it; the run validates the whole input again.
 */
export function mappingProblem(
  mapping: unknown,
  schema: Schema,
  path: string[] = [],
): MappingProblem | undefined {
  if (isExpression(mapping)) return undefined;
  // `preserve` is a literal: its argument is what the input gets.
  if (isPlainObject(mapping) && Object.keys(mapping).length === 1 && 'preserve' in mapping) {
    return literalProblem(mapping.preserve, schema, path);
  }
  const wrongType = typeProblem(mapping, schema, path);
  if (wrongType) return wrongType;
  if (Array.isArray(schema.enum) && !isPlainObject(mapping) && !Array.isArray(mapping)) {
    if (!schema.enum.some((v) => v === mapping)) {
      return {
        path: path.join('.'),
        message: `must be one of ${schema.enum.map((v) => JSON.stringify(v)).join(', ')}, the mapping gives ${JSON.stringify(mapping)}`,
      };
    }
  }
  if (isPlainObject(mapping)) {
    const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
    for (const name of required) {
      if (!Object.hasOwn(mapping, name))
        return { path: [...path, name].join('.'), message: 'is required by the action and not mapped' };
    }
    const properties = isPlainObject(schema.properties) ? schema.properties : {};
    for (const [k, v] of Object.entries(mapping)) {
      const sub = Object.hasOwn(properties, k) ? properties[k] : schema.additionalProperties;
      if (sub === false) {
        const known = Object.keys(properties);
        return {
          path: [...path, k].join('.'),
          message: `is not a field the action takes${known.length > 0 ? ` (it takes ${known.join(', ')})` : ''}`,
        };
      }
      if (isPlainObject(sub)) {
        const p = mappingProblem(v, sub, [...path, k]);
        if (p) return p;
      }
    }
  } else if (Array.isArray(mapping) && isPlainObject(schema.items)) {
    for (const [i, v] of mapping.entries()) {
      const p = mappingProblem(v, schema.items, [...path, String(i)]);
      if (p) return p;
    }
  }
  return undefined;
}

function typeProblem(value: unknown, schema: Schema, path: string[]): MappingProblem | undefined {
  const type = schema.type;
  if (type === undefined) return undefined;
  const allowed = Array.isArray(type) ? (type as string[]) : [type as string];
  const actual = typesOf(value);
  if (actual.some((t) => allowed.includes(t))) return undefined;
  return {
    path: path.join('.'),
    message: `must be ${allowed.join(' or ')}, the mapping gives ${actual[0]} ${truncate(JSON.stringify(value))}`,
  };
}

/** Inside `preserve` nothing is evaluated: every value is a literal, checked the same way. */
function literalProblem(value: unknown, schema: Schema, path: string[]): MappingProblem | undefined {
  // A literal shaped like an operation is still a literal here: only its type can be checked.
  if (isExpression(value)) return typeProblem(value, schema, path);
  return mappingProblem(value, schema, path);
}

const truncate = (s: string, n = 60): string => (s.length > n ? `${s.slice(0, n)}…` : s);
