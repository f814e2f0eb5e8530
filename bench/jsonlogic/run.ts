/**
 * Chooses the JSONLogic library (docs/workflows.md "Expressions (JSONLogic)"): runs every shared vector suite
 * (test/vectors/jsonlogic) against json-logic-engine (interpreted and compiled) and json-logic-js,
 * then times the expressions a workflow evaluates per event (edge conditions, COMPUTE logic).
 * `npm run bench -- jsonlogic [vectors-dir]`
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { LogicEngine } from 'json-logic-engine';
import jsonLogic from 'json-logic-js';
import { compile } from '../../src/areas/workflows/jsonlogic.js';

const dir = resolve(process.argv[2] ?? new URL('../../test/vectors/jsonlogic', import.meta.url).pathname);

interface Case {
  rule: unknown;
  data: unknown;
  result?: unknown;
  error?: unknown;
}

function files(d: string): string[] {
  return readdirSync(d).flatMap((n) => {
    const p = join(d, n);
    if (statSync(p).isDirectory()) return files(p);
    return n.endsWith('.json') && n !== 'index.json' && n !== 'rule_like.json' ? [p] : [];
  });
}

function load(path: string): Case[] {
  const raw = JSON.parse(readFileSync(path, 'utf8')) as unknown[];
  return raw.flatMap((e): Case[] => {
    if (typeof e === 'string') return [];
    if (Array.isArray(e)) return [{ rule: e[0], data: e[1] ?? null, result: e[2] }];
    return [e as Case];
  });
}

const engine = new LogicEngine();
type Runner = (rule: unknown, data: unknown) => unknown;
const runners: Record<string, Runner> = {
  'json-logic-engine (run)': (r, d) => engine.run(r, d),
  'json-logic-engine (build)': (r, d) => engine.build(r)(d),
  'json-logic-js': (r, d) => jsonLogic.apply(r as never, d),
};

function norm(v: unknown): unknown {
  if (typeof v === 'number' && Number.isNaN(v)) return { error: 'NaN' };
  if (Object.is(v, -0)) return 0;
  if (Array.isArray(v)) return v.map(norm);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, norm(x)]));
  return v;
}
function equal(a: unknown, b: unknown): boolean {
  if (typeof a === 'number' && typeof b === 'number') return Math.abs(a - b) < 1e-10;
  return JSON.stringify(norm(a)) === JSON.stringify(norm(b));
}

function passes(run: Runner, c: Case): boolean {
  try {
    const out = run(structuredClone(c.rule), structuredClone(c.data));
    if ('error' in c && c.error !== undefined) return false;
    return equal(out, c.result);
  } catch {
    return 'error' in c && c.error !== undefined;
  }
}

console.log(`JSONLogic vectors from ${dir}\n`);
const suites = ['jwadhams-json-logic', 'compat-tables', 'json-logic-engine'];
const totals: Record<string, Record<string, number>> = {};
for (const suite of suites) {
  const cases = files(join(dir, suite)).flatMap((f) =>
    load(f).map((c) => ({ ...c, file: relative(dir, f) })),
  );
  totals[suite] = { cases: cases.length };
  for (const [name, run] of Object.entries(runners)) {
    totals[suite][name] = cases.filter((c) => passes(run, c)).length;
  }
}
const names = Object.keys(runners);
console.log(['suite'.padEnd(22), 'cases'.padStart(6), ...names.map((n) => n.padStart(27))].join(''));
for (const suite of suites) {
  const t = totals[suite];
  console.log(
    [
      suite.padEnd(22),
      String(t.cases).padStart(6),
      ...names.map((n) => `${t[n]} (${((100 * t[n]) / t.cases).toFixed(1)}%)`.padStart(27)),
    ].join(''),
  );
}

// Micro-benchmark: the shapes a run evaluates per event.
const context = {
  event: {
    id: 'e1',
    type: 'svc.submission.created',
    data: { score: 42, answers: { q1: 'yes', list: [1, 2, 3] } },
  },
  nodes: { score: { output: { result: 42, band: 'high' } } },
};
const exprs: Record<string, unknown> = {
  edge: { '>': [{ var: 'nodes.score.output.result' }, 10] },
  compute: {
    if: [
      {
        and: [
          { '>=': [{ var: 'event.data.score' }, 40] },
          { '==': [{ var: 'event.data.answers.q1' }, 'yes'] },
        ],
      },
      'high',
      'low',
    ],
  },
  reduce: {
    reduce: [{ var: 'event.data.answers.list' }, { '+': [{ var: 'current' }, { var: 'accumulator' }] }, 0],
  },
};
function time(fn: () => void, n: number): number {
  for (let i = 0; i < 2000; i++) fn();
  const samples: number[] = [];
  for (let s = 0; s < 5; s++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) fn();
    samples.push(Number(process.hrtime.bigint() - t0) / n);
  }
  samples.sort((a, b) => a - b);
  return samples[2];
}
console.log('\nmedian ns per evaluation (5 samples; lower is better)');
console.log(
  [
    'expression'.padEnd(12),
    ...['svc (hardened, compiled)', 'engine build (cached)', 'engine run', 'json-logic-js apply'].map((s) =>
      s.padStart(26),
    ),
    'js/svc'.padStart(10),
  ].join(''),
);
for (const [name, expr] of Object.entries(exprs)) {
  const compiled = engine.build(expr) as (d: unknown) => unknown;
  const hardened = compile(expr);
  const n = 100_000;
  const h = time(() => hardened(context), n);
  const b = time(() => compiled(context), n);
  const r = time(() => engine.run(expr, context), n);
  const j = time(() => jsonLogic.apply(expr as never, context), n);
  console.log(
    [
      name.padEnd(12),
      ...[h, b, r, j].map((v) => v.toFixed(0).padStart(26)),
      `${(j / h).toFixed(1)}x`.padStart(10),
    ].join(''),
  );
}
