import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import formats from 'ajv-formats';
import { AppError } from '../../http/errors.js';
import { type BuiltinEventDefinition, EVENT_DEFINITIONS } from './definitions.js';

export interface EventRegistry {
  readonly definitions: readonly BuiltinEventDefinition[];
  get(type: string): BuiltinEventDefinition | undefined;
  /**
   * Throws AppError `EVENT.UNKNOWN_TYPE` for a type not in the registry, `EVENT.INVALID` when the
   * source, subject or data break the type's definition. Publish calls it outside production.
   */
  check(event: { type: string; source: string; subject?: string; data: unknown }): void;
  /** Where `data` breaks the data schema of a built-in type (empty when it matches). */
  dataErrors(type: string, data: unknown): Array<{ path: string; message: string }>;
}

/** `{user_id}` with `{user_id: "u1"}` → `"u1"`; undefined when the field is not a non-empty string. */
export function renderSubject(template: string, data: unknown): string | undefined {
  const m = /^\{([a-z0-9_]+)\}$/.exec(template);
  if (!m || typeof data !== 'object' || data === null) return undefined;
  const value = (data as Record<string, unknown>)[m[1]];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

export function createEventRegistry(
  definitions: readonly BuiltinEventDefinition[] = EVENT_DEFINITIONS,
): EventRegistry {
  const ajv = new Ajv({ allErrors: true, strict: false });
  (formats as unknown as { default: (a: Ajv) => void }).default(ajv);
  const byType = new Map(definitions.map((d) => [d.event_type, d]));
  // Compiled once at start; 17 small schemas.
  const validators = new Map<string, ValidateFunction>(
    definitions.map((d) => [d.event_type, ajv.compile(d.data_schema)]),
  );
  return {
    definitions,
    get: (type) => byType.get(type),
    dataErrors(type, data) {
      const validate = validators.get(type);
      if (!validate || validate(data)) return [];
      return describe(validate.errors ?? []);
    },
    check(event) {
      const def = byType.get(event.type);
      if (!def) {
        throw new AppError('EVENT.UNKNOWN_TYPE', `Event type "${event.type}" is not in the event registry`, {
          event_type: event.type,
        });
      }
      const validate = validators.get(event.type)!;
      if (!validate(event.data)) {
        throw new AppError('EVENT.INVALID', `Event data of ${event.type} does not match its schema`, {
          event_type: event.type,
          errors: describe(validate.errors ?? []),
        });
      }
      if (event.source !== def.source) {
        throw new AppError('EVENT.INVALID', `Events of ${event.type} have source "${def.source}"`, {
          event_type: event.type,
          field: 'source',
        });
      }
      const subject = renderSubject(def.subject_template, event.data);
      if (event.subject !== subject) {
        throw new AppError(
          'EVENT.INVALID',
          `The subject of ${event.type} must be ${def.subject_template} of its data`,
          { event_type: event.type, field: 'subject' },
        );
      }
    },
  };
}

function describe(errors: ErrorObject[]): Array<{ path: string; message: string }> {
  return errors.map((e) => ({ path: e.instancePath || '/', message: e.message ?? 'is invalid' }));
}
