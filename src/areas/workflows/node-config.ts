import { AppError } from '../../http/errors.js';
import { isPlainObject } from '../../lib/objects.js';
import { closestOperator, compileError, expressionProblem, isExpression } from './jsonlogic.js';
import { parseTemplate, TemplateError } from './template.js';

/**
 * Node configs: what each node type's `config` must be to be saved (docs/workflows.md "Node types"),
 * and the one template rule of COMPUTE logic and ACTION input mappings (docs/workflows.md
 * "Templates"). Pure; a violation throws AppError WORKFLOW.INVALID_GRAPH naming the node and field.
 */

export const NODE_TYPES = ['ACTION', 'COMPUTE', 'SWITCH', 'JOIN', 'DELAY', 'END', 'WAIT_EVENT'] as const;
export type NodeType = (typeof NODE_TYPES)[number];
export const invalid = (message: string, details: Record<string, unknown>): AppError =>
  new AppError('WORKFLOW.INVALID_GRAPH', message, details);

export const isInt = (v: unknown, min: number): v is number =>
  Number.isSafeInteger(v) && (v as number) >= min;

/**
 * The longest single wait a graph may ask for: a delay_ms, a timeout or one retry backoff. Waits are
 * persisted as timestamps, and an unbounded one (delay_ms up to 2^53) lies past the last date a
 * timestamp can hold; a year is far beyond any sane wait. A DELAY to a later moment says so with
 * until_template.
 */
export const MAX_WAIT_MS = 365 * 24 * 3600 * 1000;
export const isWait = (v: unknown, min: number): v is number => isInt(v, min) && v <= MAX_WAIT_MS;

/**
 * Where a value sits in the request: `path` is the machine-readable `details.field`
 * (`nodes.2.config.logic`), `label` the readable prefix of the message (`nodes.2 (key "a").config.logic`).
 */
export interface Where {
  path: string;
  label: string;
}

const within = (at: Where, suffix: string): Where => ({
  path: `${at.path}.${suffix}`,
  label: `${at.label}.${suffix}`,
});

/** Validates one node's config for its type; returns the normalised config, collecting `warnings`. */
export function validateConfig(
  type: NodeType,
  config: Record<string, unknown> | null | undefined,
  at: Where,
  warnings: string[] = [],
): Record<string, unknown> | null {
  const fail = (field: string, message: string) =>
    invalid(`${at.label}: ${message}`, { field: `${at.path}.${field}` });
  const allowOnly = (c: Record<string, unknown>, allowed: string[]) => {
    for (const k of Object.keys(c)) {
      if (!allowed.includes(k)) {
        throw fail(
          `config.${k}`,
          `${type} config does not take "${k}" (allowed: ${allowed.join(', ') || 'none'})`,
        );
      }
    }
  };
  if (config !== null && config !== undefined && !isPlainObject(config))
    throw fail('config', 'config must be an object');
  const c = config ?? null;
  switch (type) {
    case 'ACTION': {
      if (!c) throw fail('config', 'ACTION requires config with plugin_instance_id and plugin_action');
      allowOnly(c, ['plugin_instance_id', 'plugin_action', 'input_mapping']);
      for (const f of ['plugin_instance_id', 'plugin_action']) {
        if (typeof c[f] !== 'string' || (c[f] as string).length === 0) {
          throw fail(`config.${f}`, `ACTION config.${f} is required (a non-empty string)`);
        }
      }
      if (c.input_mapping !== undefined && c.input_mapping !== null) {
        if (!isPlainObject(c.input_mapping))
          throw fail('config.input_mapping', 'config.input_mapping must be an object');
        checkMapping(c.input_mapping, within(at, 'config.input_mapping'), warnings, 0, true);
      }
      return { ...c, input_mapping: c.input_mapping ?? null };
    }
    case 'COMPUTE': {
      if (!c || !('logic' in c) || c.logic === undefined || c.logic === null) {
        throw fail('config.logic', 'COMPUTE requires config.logic (a JSONLogic expression)');
      }
      allowOnly(c, ['logic']);
      // Same rule as input mappings: operator objects are evaluated, other objects are templates.
      checkMapping(c.logic, within(at, 'config.logic'), warnings);
      return c;
    }
    case 'SWITCH': {
      if (!c) return null;
      allowOnly(c, ['mode']);
      if (c.mode === undefined || c.mode === null) return { mode: 'FIRST_TRUE' };
      const mode = typeof c.mode === 'string' ? c.mode.toUpperCase() : undefined;
      if (mode !== 'FIRST_TRUE' && mode !== 'ALL_TRUE') {
        throw fail('config.mode', 'SWITCH config.mode must be FIRST_TRUE or ALL_TRUE');
      }
      return { mode };
    }
    case 'JOIN': {
      if (!c) return null;
      allowOnly(c, ['mode', 'n_required', 'timeout_ms']);
      const mode =
        c.mode === undefined || c.mode === null
          ? 'ALL'
          : typeof c.mode === 'string'
            ? c.mode.toUpperCase()
            : '';
      if (!['ALL', 'ANY', 'N_OF_M'].includes(mode))
        throw fail('config.mode', 'JOIN config.mode must be ALL, ANY or N_OF_M');
      const out: Record<string, unknown> = { mode };
      if (mode === 'N_OF_M') {
        if (!isInt(c.n_required, 1))
          throw fail('config.n_required', 'JOIN N_OF_M requires config.n_required (an integer >= 1)');
        out.n_required = c.n_required;
      } else if (c.n_required !== undefined && c.n_required !== null) {
        if (!isInt(c.n_required, 1))
          throw fail('config.n_required', 'JOIN config.n_required must be an integer >= 1');
        out.n_required = c.n_required;
      }
      if (c.timeout_ms !== undefined && c.timeout_ms !== null) {
        if (!isWait(c.timeout_ms, 0))
          throw fail(
            'config.timeout_ms',
            `JOIN config.timeout_ms must be an integer between 0 and ${MAX_WAIT_MS} (365 days)`,
          );
        out.timeout_ms = c.timeout_ms;
      }
      return out;
    }
    case 'DELAY': {
      const hasDelay = c?.delay_ms !== undefined && c?.delay_ms !== null;
      const hasTemplate = c?.until_template !== undefined && c?.until_template !== null;
      if (!c || (!hasDelay && !hasTemplate)) {
        throw fail('config', 'DELAY requires config.delay_ms or config.until_template');
      }
      allowOnly(c, ['delay_ms', 'until_template']);
      const out: Record<string, unknown> = {};
      if (hasDelay) {
        if (!isWait(c.delay_ms, 0))
          throw fail(
            'config.delay_ms',
            `DELAY config.delay_ms must be an integer between 0 and ${MAX_WAIT_MS} (365 days); use until_template for a later moment`,
          );
        out.delay_ms = c.delay_ms;
      }
      if (hasTemplate) {
        if (typeof c.until_template !== 'string')
          throw fail('config.until_template', 'DELAY config.until_template must be a string');
        try {
          parseTemplate(c.until_template);
        } catch (err) {
          if (err instanceof TemplateError)
            throw fail('config.until_template', `DELAY config.until_template: ${err.message}`);
          throw err;
        }
        out.until_template = c.until_template;
      }
      return out;
    }
    case 'END': {
      if (c && Object.keys(c).length > 0) throw fail('config', 'END takes no config (null or {})');
      return null;
    }
    case 'WAIT_EVENT':
      return waitEventConfig(c, fail, allowOnly);
  }
}

/**
 * WAIT_EVENT (docs/workflows.md "WAIT_EVENT"): `event_type` (its registration is checked where the
 * registry is, at save), `timeout_ms` 1 ms..365 days, and `correlation {run, event}`: two
 * expressions, the key the run waits on and the key an event brings.
 */
function waitEventConfig(
  c: Record<string, unknown> | null,
  fail: (field: string, message: string) => AppError,
  allowOnly: (c: Record<string, unknown>, allowed: string[]) => void,
): Record<string, unknown> {
  if (!c) throw fail('config', 'WAIT_EVENT requires config with event_type and timeout_ms');
  allowOnly(c, ['event_type', 'correlation', 'timeout_ms']);
  if (typeof c.event_type !== 'string' || c.event_type.length === 0)
    throw fail('config.event_type', 'WAIT_EVENT config.event_type is required (a registered event type)');
  if (!isWait(c.timeout_ms, 1))
    throw fail(
      'config.timeout_ms',
      `WAIT_EVENT config.timeout_ms is required: an integer between 1 and ${MAX_WAIT_MS} (365 days)`,
    );
  const out: Record<string, unknown> = { event_type: c.event_type, timeout_ms: c.timeout_ms };
  if (c.correlation !== undefined && c.correlation !== null) {
    if (!isPlainObject(c.correlation))
      throw fail('config.correlation', 'WAIT_EVENT config.correlation must be an object {run, event}');
    for (const k of Object.keys(c.correlation)) {
      if (k !== 'run' && k !== 'event')
        throw fail(`config.correlation.${k}`, `WAIT_EVENT config.correlation takes only "run" and "event"`);
    }
    for (const side of ['run', 'event'] as const) {
      const expr = c.correlation[side];
      if (expr === undefined || expr === null)
        throw fail(
          `config.correlation.${side}`,
          `WAIT_EVENT config.correlation.${side} is required: an expression on the ${side === 'run' ? "run's context" : 'incoming event'}`,
        );
      const err = compileError(expr, `correlation.${side}`);
      if (err)
        throw fail(
          `config.correlation.${side}`,
          `WAIT_EVENT config.correlation.${side} is not a valid JSONLogic expression: ${err}`,
        );
    }
    out.correlation = { run: c.correlation.run, event: c.correlation.event };
  }
  return out;
}

const MAX_TEMPLATE_DEPTH = 64;

/**
 * A template (COMPUTE logic, ACTION input mapping), docs/workflows.md "Templates": an object is an
 * operation if and only if it has exactly one key naming an operator svc knows, and must then be a
 * valid expression; every other object and every list is a template, its keys kept and its values
 * evaluated the same way; `preserve` keeps a literal as it is. A template key one typo away from an
 * operator ({"vr": ...}) is kept, with a warning. `fields`: the top of an input mapping, whose keys
 * name the input's fields even when one of them is spelled like an operator.
 */
function checkMapping(value: unknown, at: Where, warnings: string[], depth = 0, fields = false): void {
  if (depth > MAX_TEMPLATE_DEPTH) {
    throw invalid(`${at.label}: nested more than ${MAX_TEMPLATE_DEPTH} levels deep`, { field: at.path });
  }
  if (!fields && isExpression(value)) {
    const problem = expressionProblem(value);
    if (problem) {
      throw invalid(`${at.label}: not a valid JSONLogic expression: ${compileError(value)}`, {
        field: problem.path ? `${at.path}.${problem.path}` : at.path,
      });
    }
    const err = compileError(value, at.label);
    if (err) throw invalid(`${at.label}: not a valid JSONLogic expression: ${err}`, { field: at.path });
    return;
  }
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) checkMapping(v, within(at, String(i)), warnings, depth + 1);
  } else if (isPlainObject(value)) {
    const keys = Object.keys(value);
    const meant = !fields && keys.length === 1 ? closestOperator(keys[0]) : undefined;
    if (meant !== undefined) {
      warnings.push(
        `${at.label}: "${keys[0]}" is no operator, so this object is a template and "${keys[0]}" a key of its ` +
          `output; did you mean the operator "${meant}"? (field ${at.path})`,
      );
    }
    for (const [k, v] of Object.entries(value)) checkMapping(v, within(at, k), warnings, depth + 1);
  }
}
