import { createHash } from 'node:crypto';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { AppError } from '../../http/errors.js';

/**
 * Answers are validated against the questionnaire's `payload.answers_schema`, a JSON Schema (draft-07
 * by default; 2019-09 and 2020-12 when its `$schema` says so). A questionnaire without one accepts any
 * answers object. Schemas are authored by providers holding questionnaire:write, so they are trusted
 * like configuration; still, compiling is bounded (size, depth) and a broken schema is a clear 422,
 * never a 500. Compiled validators are cached by the schema's content hash.
 */

const MAX_ERRORS = 20;
const MAX_SCHEMA_BYTES = 256 * 1024;
const MAX_SCHEMA_DEPTH = 32;
const CACHE_SIZE = 200;

function make<T extends Ajv>(A: new (opts: object) => T): T {
  // Answers are validated as given: no defaults inserted, no coercion, nothing removed.
  const ajv = new A({
    allErrors: true,
    strict: false,
    useDefaults: false,
    coerceTypes: false,
    loadSchema: undefined,
  });
  (formats as unknown as { default: (a: Ajv) => void }).default(ajv);
  return ajv;
}

const validators = {
  draft07: make(Ajv),
  d2019: make(Ajv2019 as never),
  d2020: make(Ajv2020 as never),
} as const;
const cache = new Map<string, ValidateFunction>();

function depth(value: unknown, level = 0): number {
  if (level > MAX_SCHEMA_DEPTH) return level;
  if (value === null || typeof value !== 'object') return level;
  let max = level;
  for (const v of Object.values(value)) max = Math.max(max, depth(v, level + 1));
  return max;
}

function schemaInvalid(questionnaireId: string, reason: string): AppError {
  return new AppError(
    'SUBMISSION.ANSWERS_SCHEMA_INVALID',
    `The questionnaire's answers_schema cannot be used to validate answers: ${reason}`,
    { questionnaire_id: questionnaireId, reason },
  );
}

function compile(questionnaireId: string, schema: unknown): ValidateFunction {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    if (typeof schema === 'boolean') return compileText(questionnaireId, schema, JSON.stringify(schema));
    throw schemaInvalid(questionnaireId, 'it must be a JSON Schema object');
  }
  const text = JSON.stringify(schema);
  if (text.length > MAX_SCHEMA_BYTES) throw schemaInvalid(questionnaireId, 'it is larger than 256 KiB');
  if (depth(schema) > MAX_SCHEMA_DEPTH) throw schemaInvalid(questionnaireId, 'it is nested too deeply');
  return compileText(questionnaireId, schema, text);
}

function compileText(questionnaireId: string, schema: object | boolean, text: string): ValidateFunction {
  const key = createHash('sha256').update(text).digest('hex');
  const hit = cache.get(key);
  if (hit) {
    // Refresh its place: the cache evicts the least recently used.
    cache.delete(key);
    cache.set(key, hit);
    return hit;
  }
  const dialect = typeof schema === 'object' ? String((schema as { $schema?: unknown }).$schema ?? '') : '';
  const ajv = dialect.includes('2020-12')
    ? validators.d2020
    : dialect.includes('2019-09')
      ? validators.d2019
      : validators.draft07;
  let fn: ValidateFunction;
  try {
    // A schema with an $id would be registered in the shared instance; remove it after compiling so
    // a later edit of the same $id compiles again instead of clashing.
    fn = ajv.compile(schema);
    const id = typeof schema === 'object' ? (schema as { $id?: unknown }).$id : undefined;
    if (typeof id === 'string') ajv.removeSchema(id);
  } catch (err) {
    throw schemaInvalid(questionnaireId, (err as Error).message);
  }
  cache.set(key, fn);
  if (cache.size > CACHE_SIZE) cache.delete(cache.keys().next().value as string);
  return fn;
}

export interface AnswerError {
  /** JSON Pointer into the answers object ('' is the object itself). */
  path: string;
  keyword: string;
  message: string;
  params: Record<string, unknown>;
}

/** Where the schema lives: `payload.answers_schema` of the questionnaire. */
export function answersSchemaOf(payload: Record<string, unknown> | null | undefined): unknown {
  return payload && typeof payload === 'object' ? payload.answers_schema : undefined;
}

/**
 * Why `payload.answers_schema` could not validate answers, or null when it can (or there is none).
 * The questionnaires area asks before publishing, so a published questionnaire always accepts
 * submissions its schema allows.
 */
export function answersSchemaProblem(payload: Record<string, unknown> | null | undefined): string | null {
  const schema = answersSchemaOf(payload);
  if (schema === undefined || schema === null) return null;
  try {
    compile('', schema);
    return null;
  } catch (err) {
    return String((err as AppError).details?.reason);
  }
}

/** Throws 400 SUBMISSION.INVALID_ANSWERS with every problem (up to 20) when the answers do not fit. */
export function validateAnswers(
  questionnaire: { id: string; payload?: Record<string, unknown> | null },
  answers: Record<string, unknown>,
): void {
  const schema = answersSchemaOf(questionnaire.payload);
  if (schema === undefined || schema === null) return;
  const validate = compile(questionnaire.id, schema);
  if (validate(answers)) return;
  const errors = (validate.errors ?? []).slice(0, MAX_ERRORS).map(
    (e: ErrorObject): AnswerError => ({
      path: e.instancePath,
      keyword: e.keyword,
      message: e.message ?? 'is invalid',
      params: e.params as Record<string, unknown>,
    }),
  );
  const first = errors[0];
  throw new AppError(
    'SUBMISSION.INVALID_ANSWERS',
    `Answers do not match the questionnaire: ${first ? `${first.path || 'answers'} ${first.message}` : 'invalid'}`,
    { questionnaire_id: questionnaire.id, errors },
  );
}
