import type { Static } from '@sinclair/typebox';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import formats from 'ajv-formats';
import { AppError } from '../../http/errors.js';
import { validateCloudEvent } from './cloudevent.js';
import type { BuiltinEventDefinition } from './definitions.js';
import type { EventDefinition as EventDefinitionSchema } from './schemas.js';
import type { EventTypeDefinitionTable } from './tables.js';

/** The rules of a custom event type's definition, and its API shape (event-types.ts uses them). */

export type EventDefinition = Static<typeof EventDefinitionSchema>;

export const newAjv = () => {
  const ajv = new Ajv({ allErrors: true, strict: false });
  (formats as unknown as { default: (a: Ajv) => void }).default(ajv);
  return ajv;
};

/**
 * A data_schema must compile (draft-07 / 2019-09 keywords; no remote $ref is ever fetched); answers
 * its validator (undefined for no schema).
 */
export function checkSchema(schema: unknown): ValidateFunction | undefined {
  if (schema === null) return undefined;
  try {
    return newAjv().compile(schema as object);
  } catch (err) {
    throw new AppError(
      'VALIDATION_ERROR',
      `data_schema is not a valid JSON Schema: ${(err as Error).message}`,
      {
        field: 'data_schema',
      },
    );
  }
}

/** Each example is a valid CloudEvent of the type whose data matches the schema (checkSchema's validator). */
export function checkExamples(
  type: string,
  validate: ValidateFunction | undefined,
  examples: readonly Record<string, unknown>[],
): void {
  for (const [i, example] of examples.entries()) {
    const field = `examples.${i}`;
    const check = validateCloudEvent(example);
    if (!check.valid) {
      const e = check.errors[0];
      throw new AppError(
        'VALIDATION_ERROR',
        `${field} is not a valid CloudEvent: ${e.attribute} ${e.message}`,
        {
          field,
        },
      );
    }
    if (example.type !== type) {
      throw new AppError('VALIDATION_ERROR', `${field}.type must be "${type}"`, { field: `${field}.type` });
    }
    if (validate && !validate(example.data ?? null)) {
      throw new AppError('VALIDATION_ERROR', `${field}.data does not match data_schema`, {
        field: `${field}.data`,
        errors: describeErrors(validate.errors ?? []),
      });
    }
  }
}

export function builtin(d: BuiltinEventDefinition): EventDefinition {
  return { ...d, builtin: true, created_at: null, updated_at: null };
}

export function toDefinition(row: EventTypeDefinitionTable): EventDefinition {
  return {
    event_type: row.event_type,
    schema_version: row.schema_version,
    description: row.description,
    source: null,
    data_schema: row.data_schema === null ? null : (JSON.parse(row.data_schema) as Record<string, unknown>),
    subject_template: null,
    examples: JSON.parse(row.examples) as Record<string, unknown>[],
    deprecated: row.deprecated === 1,
    builtin: false,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export function describeErrors(errors: ErrorObject[]): Array<{ path: string; message: string }> {
  return errors
    .slice(0, 20)
    .map((e) => ({ path: e.instancePath || '/', message: e.message ?? 'is invalid' }));
}

export function compare(a: string | boolean, b: string | boolean): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
