/**
 * JSONLogic for every expression of the product: subscription conditions, edge conditions, COMPUTE
 * logic, ACTION input mappings, and POST /workflow/evaluate (docs/workflows.md "Expressions (JSONLogic)").
 *
 * Library: json-logic-engine, chosen by running the shared vectors and a micro-benchmark
 * (`npm run bench -- jsonlogic`, results in docs/workflows.md): it passes every classic json-logic-js
 * vector and the community suites, and its compiled functions are much faster than json-logic-js.
 *
 * Two things the library does not give us, added here:
 * - Data access (`var`, `val`, `exists`, `missing`, `missing_some`) walks own properties only, so no
 *   path can reach a prototype member (`__proto__`, `constructor`, `toString`, ...). Paths are dot
 *   notation only; `a[0]` is a key that does not exist, so it yields null (rule 5).
 * - Every failure, including the library's non-Error throws (`NaN`, `{type: "Unknown Operator"}`),
 *   becomes an ExpressionError with a readable message.
 */

import { LogicEngine, splitPathMemoized } from 'json-logic-engine';
import { Lru } from '../../lib/lru.js';
import { editDistance, isSubsequence } from '../../lib/suggest.js';

export class ExpressionError extends Error {
  override readonly name = 'ExpressionError';
  /** The message without the `where` prefix. */
  readonly reason: string;
  constructor(where: string, reason: string) {
    super(where ? `${where}: ${reason}` : reason);
    this.reason = reason;
  }
}

export type Compiled = (data: unknown) => unknown;

const hasOwn = (value: unknown, key: string): boolean =>
  value !== null && value !== undefined && Object.hasOwn(Object(value), key);

/** Walks `path` through own properties only; undefined when any segment is missing. */
export function lookup(data: unknown, parts: readonly string[]): unknown {
  let current = data;
  for (const part of parts) {
    if (!hasOwn(current, part)) return undefined;
    current = (current as Record<string, unknown>)[part];
  }
  return typeof current === 'function' ? undefined : current;
}

const splitPath = (key: unknown): string[] => (key === '' ? [] : splitPathMemoized(String(key)));

/** Climbs `../` prefixes into outer iterator scopes (json-logic-engine's scope traversal). */
function climb(key: unknown, context: unknown, above: unknown[]): { key: unknown; context: unknown } {
  let iter = 0;
  let ctx = context;
  let k = key;
  let scopes = above ?? [];
  while (typeof k === 'string' && k.startsWith('../') && iter < scopes.length) {
    ctx = scopes[iter++];
    k = k.substring(3);
    if (iter === scopes.length && Array.isArray(ctx)) {
      iter = 0;
      scopes = ctx;
      ctx = scopes[iter++];
    }
  }
  return { key: k, context: ctx };
}

/**
 * `val` (the newer proposal): a key, or path segments, optionally starting with `[n]` to climb n
 * iterator scopes; undefined when not found. Mirrors the library's own implementation, own properties only.
 */
function valOf(input: unknown, context: unknown, aboveIn: unknown[]): unknown {
  let args = input;
  if (Array.isArray(args) && args.length === 1 && !Array.isArray(args[0])) args = args[0];
  if (!Array.isArray(args)) {
    if (context === null || context === undefined) return undefined;
    return lookup(context, [String(args)]);
  }
  let above = aboveIn ?? [];
  let result: unknown = context;
  let start = 0;
  if (Array.isArray(args[0]) && args[0].length === 1) {
    start = 1;
    const levels = Math.abs(Number(args[0][0]));
    let pos = 0;
    for (let i = 0; i < levels; i++) {
      result = above[pos++];
      if (i === above.length - 1 && Array.isArray(result)) {
        above = result;
        result = result[0];
        pos = 1;
      }
    }
  }
  return lookup(result, args.slice(start).map(String));
}

function makeEngine(): LogicEngine {
  const engine = new LogicEngine();
  // Replacing the built-ins (which index plain objects) also switches off the compiler's inlined
  // property access for them, so every path goes through `lookup`.
  engine.addMethod(
    'var',
    (args: unknown, context: unknown, above: unknown[]) => {
      let key = args;
      let fallback: unknown = null;
      if (Array.isArray(args)) {
        key = args[0];
        fallback = args[1] ?? null;
      }
      const scoped = climb(key, context, above);
      if (scoped.key === undefined || scoped.key === null || scoped.key === '') {
        return typeof scoped.context === 'function' ? null : (scoped.context ?? null);
      }
      const value = lookup(scoped.context, splitPath(scoped.key));
      return value === undefined ? fallback : value;
    },
    { deterministic: false },
  );
  engine.addMethod(
    'val',
    (args: unknown, context: unknown, above: unknown[]) => valOf(args, context, above) ?? null,
    {
      deterministic: false,
    },
  );
  engine.addMethod(
    'exists',
    (args: unknown, context: unknown, above: unknown[]) => valOf(args, context, above) !== undefined,
    { deterministic: false },
  );
  engine.addMethod(
    'missing',
    (args: unknown, context: unknown) => {
      const keys = (Array.isArray(args) ? args : [args]).flat();
      return keys.filter((k) => {
        const v = lookup(context, splitPath(k));
        return v === undefined || v === null || v === '';
      });
    },
    { deterministic: false },
  );
  engine.addMethod(
    'missing_some',
    (args: unknown, context: unknown) => {
      const [need, keys] = Array.isArray(args) ? args : [0, []];
      const list = Array.isArray(keys) ? keys : [keys];
      const missing = list.filter((k) => {
        const v = lookup(context, splitPath(k));
        return v === undefined || v === null || v === '';
      });
      return list.length - missing.length >= Number(need) ? [] : missing;
    },
    { deterministic: false },
  );
  // `get` indexes arbitrary objects with arbitrary keys; nothing in the product needs it.
  delete (engine.methods as Record<string, unknown>).get;
  return engine;
}

const engine = makeEngine();

/** The operators an object key must name to be treated as an expression (input mappings). */
export function isOperator(name: string): boolean {
  return Object.hasOwn(engine.methods as object, name);
}

/** True when `value` looks like a JSONLogic operation: an object with exactly one operator key. */
export function isExpression(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const keys = Object.keys(value);
  return keys.length === 1 && isOperator(keys[0]);
}

/** An operator name as users mistype it, with the closest real one when there is a close one. */
export function unknownOperator(name: string): string {
  const guess = closestOperator(name);
  return `unknown operator "${name}"${guess ? ` (did you mean "${guess}"?)` : ''}`;
}

/** The operator `name` is a close misspelling of (the did-you-mean rule), if any; never `name` itself. */
export function closestOperator(name: string): string | undefined {
  if (isOperator(name)) return undefined;
  const typed = name.toLowerCase();
  // Fewest edits first; among equals, one that starts like the name and contains its letters in
  // order ("vr": "var" before "or" and "val").
  const score = (op: string) => [
    editDistance(typed, op),
    op[0] === typed[0] ? 0 : 1,
    isSubsequence(typed, op) ? 0 : 1,
  ];
  let best: string | undefined;
  let bestScore = [Number.POSITIVE_INFINITY];
  for (const op of Object.keys(engine.methods as object)) {
    const sc = score(op);
    const better = sc.findIndex((v, i) => v !== bestScore[i]);
    if (better !== -1 && (bestScore[better] === undefined || sc[better] < bestScore[better])) {
      best = op;
      bestScore = sc;
    }
  }
  const distance = bestScore[0];
  // A guess at most a third of the name away (1 for short names), and never one as far as the name
  // is long ("k" is no typo of "+").
  return distance < name.length && distance <= Math.max(1, Math.floor(name.length / 3)) ? best : undefined;
}

/** Deeper expressions are refused (the library would overflow the stack building them). */
const MAX_EXPRESSION_DEPTH = 512;

/** What is wrong in an expression, and where (the JSON path inside it, e.g. `if.0`). */
export interface ExpressionProblem {
  /** Dot path inside the expression; empty for the expression itself. */
  path: string;
  reason: string;
}

/**
 * Finds the first object in an expression that is not an operation: every object inside JSONLogic is
 * one (a single key naming an operator), except inside `preserve`, which keeps its argument as it is.
 */
export function expressionProblem(expression: unknown, path: string[] = []): ExpressionProblem | undefined {
  if (path.length > MAX_EXPRESSION_DEPTH)
    return { path: path.join('.'), reason: 'expression is nested too deeply' };
  if (Array.isArray(expression)) {
    for (const [i, v] of expression.entries()) {
      const p = expressionProblem(v, [...path, String(i)]);
      if (p) return p;
    }
    return undefined;
  }
  if (expression === null || typeof expression !== 'object') return undefined;
  const keys = Object.keys(expression);
  if (keys.length === 0) return undefined;
  const at = path.join('.');
  if (keys.length > 1) {
    return {
      path: at,
      reason: `an object with several keys (${keys
        .slice(0, 5)
        .map((k) => `"${k}"`)
        .join(', ')}) is not an operation; write a literal object as {"preserve": {...}}`,
    };
  }
  const [op] = keys;
  if (!isOperator(op)) return { path: at, reason: unknownOperator(op) };
  const args = (expression as Record<string, unknown>)[op];
  if (op === 'preserve') return undefined;
  // `eachKey` builds an object: its argument's keys are names, its values expressions.
  if (op === 'eachKey' && args !== null && typeof args === 'object' && !Array.isArray(args)) {
    for (const [k, v] of Object.entries(args)) {
      const p = expressionProblem(v, [...path, op, k]);
      if (p) return p;
    }
    return undefined;
  }
  return expressionProblem(args, [...path, op]);
}

/** A readable message for whatever the library threw. */
export function describeThrown(err: unknown): string {
  if (err instanceof ExpressionError) return err.message;
  if (err instanceof RangeError && /call stack/i.test(err.message)) return 'expression is nested too deeply';
  if (err instanceof Error) return err.message || err.name;
  if (typeof err === 'number' && Number.isNaN(err)) return 'arithmetic on a value that is not a number (NaN)';
  if (err && typeof err === 'object') {
    const o = err as Record<string, unknown>;
    const type = o.type ?? o.error ?? o.message;
    if (type === 'Unknown Operator' && typeof o.key === 'string') return `unknown operator "${o.key}"`;
    if (type === 'NaN') return 'arithmetic on a value that is not a number (NaN)';
    if (type !== undefined) return `expression threw ${truncate(safeJson(type))}`;
    return `expression threw ${truncate(safeJson(err))}`;
  }
  if (err === undefined || err === null) return 'expression failed';
  return `expression threw ${truncate(safeJson(err))}`;
}

function safeJson(v: unknown): string {
  try {
    return typeof v === 'string' ? v : (JSON.stringify(v) ?? String(v));
  } catch {
    return String(v);
  }
}

const truncate = (s: string, n = 200): string => (s.length > n ? `${s.slice(0, n)}…` : s);

function finite(value: unknown): unknown {
  // The library returns NaN for bad arithmetic in some paths instead of throwing; treat it as a failure.
  if (typeof value === 'number' && !Number.isFinite(value)) {
    throw new ExpressionError(
      '',
      Number.isNaN(value)
        ? 'arithmetic on a value that is not a number (NaN)'
        : 'arithmetic overflowed to Infinity',
    );
  }
  return value;
}

/**
 * Compiles an expression once; the returned function evaluates it against data. Throws ExpressionError
 * (with `where` in the message) for an expression the library cannot build, e.g. an unknown operator.
 */
export function compile(expression: unknown, where = 'expression'): Compiled {
  let fn: (data: unknown) => unknown;
  try {
    fn = engine.build(structuredClone(expression)) as (data: unknown) => unknown;
  } catch (err) {
    throw new ExpressionError(where, describeThrown(err));
  }
  return (data: unknown) => {
    try {
      return finite(fn(data));
    } catch (err) {
      throw new ExpressionError(where, describeThrown(err));
    }
  };
}

/**
 * Checks that an expression compiles; answers why not (without a location prefix) when it does not,
 * naming where inside it an unknown operator is (`at if.0: unknown operator "vr" (did you mean "var"?)`).
 */
export function compileError(expression: unknown, where = ''): string | undefined {
  const problem = expressionProblem(expression);
  if (problem) return problem.path ? `at ${problem.path}: ${problem.reason}` : problem.reason;
  try {
    compile(expression, where);
    return undefined;
  } catch (err) {
    return err instanceof ExpressionError ? err.reason : describeThrown(err);
  }
}

/** JSONLogic truthiness (`[]` and `""` and `0` are false, `{}` is true): the library's own rule. */
export function truthy(value: unknown): boolean {
  return Boolean(engine.truthy(value));
}

/**
 * A small cache of compiled expressions keyed by their JSON text, for expressions that are not part
 * of a cached plan (subscription conditions, POST /workflow/evaluate). Bounded; oldest evicted.
 */
export class CompiledCache {
  private readonly compiled: Lru<Compiled>;
  constructor(max = 1000) {
    this.compiled = new Lru(max);
  }

  get(expression: unknown, where: string): Compiled {
    return this.compiled.getOrCreate(`${where}\u0000${JSON.stringify(expression)}`, () =>
      compile(expression, where),
    );
  }
}
