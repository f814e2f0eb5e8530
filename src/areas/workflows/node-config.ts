import { AppError } from '../../http/errors.js';
import { isPlainObject } from '../../lib/objects.js';
import { closestOperator, compileError, expressionProblem, isExpression } from './jsonlogic.js';
import { parseTemplate, TemplateError } from './template.js';

/**
 * Node configs: what each node type's `config` must be to be saved (docs/workflows.md "Node types"),
 * and the one template rule of COMPUTE logic and ACTION input mappings (docs/workflows.md
 * "Templates"). Pure; a violation throws AppError WORKFLOW.INVALID_GRAPH naming the node and field.
 */

export const NODE_TYPES = [
  'ACTION',
  'COMPUTE',
  'SWITCH',
  'JOIN',
  'DELAY',
  'END',
  'WAIT_EVENT',
  'FOREACH',
  'CALL',
] as const;
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
  const allowOnly = (c: Record<string, unknown>, allowed: string[], base = 'config') => {
    for (const k of Object.keys(c)) {
      if (!allowed.includes(k)) {
        throw fail(
          `${base}.${k}`,
          `${type} ${base} does not take "${k}" (allowed: ${allowed.join(', ') || 'none'})`,
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
      return actionConfig(c, at, 'config', fail, warnings);
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
    case 'CALL': {
      if (!c) throw fail('config', 'CALL requires config with subscription_id and input');
      allowOnly(c, ['subscription_id', 'input', 'wait']);
      if (c.wait !== undefined && c.wait !== null && typeof c.wait !== 'boolean')
        throw fail('config.wait', 'CALL config.wait must be true or false');
      return { ...callConfig(c, at, 'config', fail, warnings), wait: c.wait !== false };
    }
    case 'FOREACH':
      return forEachConfig(c, at, fail, allowOnly, warnings);
  }
}

/** The item limits of FOREACH (docs/workflows.md "FOREACH"). */
export const FOREACH_LIMITS = {
  concurrency: 100,
  defaultConcurrency: 10,
  maxItems: 10_000,
  defaultMaxItems: 1000,
};

type Fail = (field: string, message: string) => AppError;

/** An action call (ACTION, FOREACH's `action`) at `base`: the instance, the action, the input mapping. */
function actionConfig(
  c: Record<string, unknown>,
  at: Where,
  base: string,
  fail: Fail,
  warnings: string[],
): Record<string, unknown> {
  for (const f of ['plugin_instance_id', 'plugin_action']) {
    if (typeof c[f] !== 'string' || (c[f] as string).length === 0) {
      throw fail(`${base}.${f}`, `ACTION ${base}.${f} is required (a non-empty string)`);
    }
  }
  if (c.input_mapping !== undefined && c.input_mapping !== null) {
    if (!isPlainObject(c.input_mapping))
      throw fail(`${base}.input_mapping`, `${base}.input_mapping must be an object`);
    checkMapping(c.input_mapping, within(at, `${base}.input_mapping`), warnings, 0, true);
  }
  return { ...c, input_mapping: c.input_mapping ?? null };
}

/** A call of another subscription (CALL, FOREACH's `call`) at `base`: its id and the child's trigger data, a template. */
function callConfig(
  c: Record<string, unknown>,
  at: Where,
  base: string,
  fail: Fail,
  warnings: string[],
): { subscription_id: string; input: unknown } {
  if (typeof c.subscription_id !== 'string' || c.subscription_id.length === 0)
    throw fail(`${base}.subscription_id`, `${base}.subscription_id is required (the subscription to call)`);
  const input = c.input ?? {};
  checkMapping(input, within(at, `${base}.input`), warnings, 0, isPlainObject(input));
  return { subscription_id: c.subscription_id, input };
}

/**
 * FOREACH (docs/workflows.md "FOREACH"): `items` (an expression yielding a list), `concurrency`
 * 1..100 (10), `max_items` 1..10,000 (1,000), `on_item_failure` fail|continue (fail), and exactly one
 * of `action` (an ACTION's config, its mapping reading `item` and `index`) or `call` (a CALL's).
 */
function forEachConfig(
  c: Record<string, unknown> | null,
  at: Where,
  fail: Fail,
  allowOnly: (c: Record<string, unknown>, allowed: string[], base?: string) => void,
  warnings: string[],
): Record<string, unknown> {
  if (!c) throw fail('config', 'FOREACH requires config with items and one of action or call');
  allowOnly(c, ['items', 'concurrency', 'max_items', 'on_item_failure', 'action', 'call']);
  if (c.items === undefined || c.items === null)
    throw fail('config.items', 'FOREACH config.items is required: an expression yielding a list');
  checkMapping(c.items, within(at, 'config.items'), warnings);
  const limits = FOREACH_LIMITS;
  const concurrency = c.concurrency ?? limits.defaultConcurrency;
  if (!isInt(concurrency, 1) || concurrency > limits.concurrency)
    throw fail(
      'config.concurrency',
      `FOREACH config.concurrency must be an integer from 1 to ${limits.concurrency}`,
    );
  const maxItems = c.max_items ?? limits.defaultMaxItems;
  if (!isInt(maxItems, 1) || maxItems > limits.maxItems)
    throw fail(
      'config.max_items',
      `FOREACH config.max_items must be an integer from 1 to ${limits.maxItems}`,
    );
  const onItemFailure = c.on_item_failure ?? 'fail';
  if (onItemFailure !== 'fail' && onItemFailure !== 'continue')
    throw fail('config.on_item_failure', 'FOREACH config.on_item_failure must be "fail" or "continue"');
  const hasAction = c.action !== undefined && c.action !== null;
  const hasCall = c.call !== undefined && c.call !== null;
  if (hasAction === hasCall)
    throw fail(
      hasAction ? 'config.call' : 'config',
      'FOREACH takes exactly one of config.action or config.call',
    );
  const out: Record<string, unknown> = {
    items: c.items,
    concurrency,
    max_items: maxItems,
    on_item_failure: onItemFailure,
  };
  const part = (hasAction ? c.action : c.call) as unknown;
  const name = hasAction ? 'action' : 'call';
  if (!isPlainObject(part)) throw fail(`config.${name}`, `FOREACH config.${name} must be an object`);
  if (hasAction) {
    allowOnly(part, ['plugin_instance_id', 'plugin_action', 'input_mapping'], 'config.action');
    out.action = actionConfig(part, at, 'config.action', fail, warnings);
  } else {
    allowOnly(part, ['subscription_id', 'input'], 'config.call');
    out.call = callConfig(part, at, 'config.call', fail, warnings);
  }
  return out;
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
