import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import fc from 'fast-check';
import { LogicEngine } from 'json-logic-engine';
import { describe, expect, it } from 'vitest';
import {
  CompiledCache,
  compile,
  describeThrown,
  isExpression,
  truthy,
} from '../../src/areas/workflows/jsonlogic.js';

/** The shared vectors the library was chosen by (test/vectors/jsonlogic, see its SOURCES.md). */
const VECTORS = resolve(
  process.env.SVC_JSONLOGIC_VECTORS ?? join(import.meta.dirname, '../vectors/jsonlogic'),
);

interface Case {
  rule: unknown;
  data: unknown;
  result?: unknown;
  error?: unknown;
  description?: string;
}

function suite(name: string): Case[] {
  const files = (d: string): string[] =>
    readdirSync(d).flatMap((n) => {
      const p = join(d, n);
      if (statSync(p).isDirectory()) return files(p);
      return n.endsWith('.json') && n !== 'index.json' && n !== 'rule_like.json' ? [p] : [];
    });
  return files(join(VECTORS, name)).flatMap((f) =>
    (JSON.parse(readFileSync(f, 'utf8')) as unknown[]).flatMap((e): Case[] => {
      if (typeof e === 'string') return [];
      if (Array.isArray(e)) return [{ rule: e[0], data: e[1] ?? null, result: e[2] }];
      return [e as Case];
    }),
  );
}

function passes(run: (rule: unknown, data: unknown) => unknown, c: Case): boolean {
  try {
    const out = run(structuredClone(c.rule), structuredClone(c.data));
    return c.error === undefined && JSON.stringify(out) === JSON.stringify(c.result);
  } catch {
    return c.error !== undefined;
  }
}

const ours = (rule: unknown, data: unknown) => compile(rule)(data);
const library = new LogicEngine();
const theirs = (rule: unknown, data: unknown) => library.build(rule)(data);

describe('JSONLogic vectors', () => {
  it('passes every classic json-logic-js vector (jsonlogic.com tests.json)', () => {
    const cases = suite('jwadhams-json-logic');
    expect(cases.length).toBe(277);
    expect(cases.filter((c) => !passes(ours, c)).map((c) => JSON.stringify(c.rule))).toEqual([]);
  });

  it('passes every json-logic-engine suite vector, hardening included', () => {
    const cases = suite('json-logic-engine');
    expect(cases.length).toBe(1136);
    expect(cases.filter((c) => !passes(ours, c)).map((c) => c.description)).toEqual([]);
  });

  it('passes exactly the compat-tables vectors the unmodified library passes', () => {
    const cases = suite('compat-tables');
    const mine = cases.filter((c) => passes(ours, c)).length;
    const lib = cases.filter((c) => passes(theirs, c)).length;
    expect(mine).toBe(lib);
    expect(mine / cases.length).toBeGreaterThan(0.98);
  });
});

describe('JSONLogic hardening', () => {
  const data = { a: { b: 1 }, list: [{ x: 1 }], s: 'abc' };
  const PROTO = [
    '__proto__',
    'constructor',
    'prototype',
    'toString',
    'hasOwnProperty',
    'valueOf',
    '__defineGetter__',
  ];

  it.each(PROTO)('var "%s" (and nested under an object, list and string) is null', (name) => {
    for (const path of [name, `a.${name}`, `list.${name}`, `s.${name}`, `${name}.name`, `a.${name}.name`]) {
      expect(compile({ var: path })(data)).toBeNull();
      expect(compile({ val: path.split('.') })(data)).toBeNull();
      expect(compile({ exists: path.split('.') })(data)).toBe(false);
    }
    expect(compile({ missing: [name] })(data)).toEqual([name]);
  });

  it('no path of own-or-prototype names ever yields a value that is not in the data', () => {
    const segment = fc.oneof(
      fc.constantFrom(...PROTO, 'a', 'b', 'list', '0', 'x', 's', 'length'),
      fc.string({ maxLength: 4 }),
    );
    fc.assert(
      fc.property(fc.array(segment, { minLength: 1, maxLength: 4 }), (parts) => {
        const value = compile({ var: parts.join('.') })(data);
        // Every reachable value is JSON data: never a function, never a prototype object.
        expect(typeof value).not.toBe('function');
        if (value !== null && typeof value === 'object') {
          const proto = Object.getPrototypeOf(value);
          expect(proto === Object.prototype || proto === Array.prototype).toBe(true);
          expect(value === Object.prototype || value === Array.prototype).toBe(false);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('dot paths work; bracket notation yields null (execution rule 5)', () => {
    expect(compile({ var: 'list.0.x' })(data)).toBe(1);
    expect(compile({ var: 'list[0].x' })(data)).toBeNull();
    expect(compile({ var: 'a.b' })(data)).toBe(1);
    expect(compile({ var: ['a.missing', 'fallback'] })(data)).toBe('fallback');
  });

  it('library errors, including non-Error throws, become readable ExpressionErrors', () => {
    expect(() => compile({ nope: [1] }, 'logic')).toThrow('logic: unknown operator "nope"');
    expect(() => compile({ '/': [1, 0] }, 'logic')(data)).toThrow(
      /logic: arithmetic on a value that is not a number \(NaN\)/,
    );
    expect(() => compile({ '+': ['x', 1] }, 'logic')(data)).toThrow(/NaN/);
    expect(() => compile({ throw: 'custom' }, 'logic')(data)).toThrow('logic: expression threw custom');
    expect(describeThrown(Number.NaN)).toMatch(/NaN/);
    expect(describeThrown({ type: 'Unknown Operator', key: 'q' })).toBe('unknown operator "q"');
    expect(describeThrown(undefined)).toBe('expression failed');
    expect(describeThrown('plain')).toBe('expression threw plain');
    expect(describeThrown(new TypeError('bad'))).toBe('bad');
  });

  it('tells expressions from literal objects by a single operator key', () => {
    expect(isExpression({ var: 'x' })).toBe(true);
    expect(isExpression({ if: [true, 1, 2] })).toBe(true);
    expect(isExpression({ var: 'x', other: 1 })).toBe(false);
    expect(isExpression({ url: 'https://example.test' })).toBe(false);
    expect(isExpression([{ var: 'x' }])).toBe(false);
    expect(isExpression('text')).toBe(false);
  });

  it('JSONLogic truthiness: empty list and string are false', () => {
    expect([[], '', 0, null, false].map(truthy)).toEqual([false, false, false, false, false]);
    expect([[0], 'a', 1, true].map(truthy)).toEqual([true, true, true, true]);
  });

  it('compiles once per distinct expression (the cache answers the same function)', () => {
    const cache = new CompiledCache(2);
    const a = cache.get({ var: 'a' }, 'x');
    expect(cache.get({ var: 'a' }, 'x')).toBe(a);
    cache.get({ var: 'b' }, 'x');
    cache.get({ var: 'c' }, 'x');
    // Bounded: the least recently used entry was evicted and is compiled again.
    expect(cache.get({ var: 'a' }, 'x')).not.toBe(a);
  });
});
