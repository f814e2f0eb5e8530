import { describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/areas/workflows/node-config.js';
import { compileMapping } from '../../src/areas/workflows/plan.js';
import { AppError } from '../../src/http/errors.js';

/**
 * The one template rule (docs/workflows.md "Templates"), as a table: what the save says of a COMPUTE
 * `logic`, and what the run computes from it, through the same functions the API and the engine use.
 * An object is an operation if and only if it has exactly one key naming an operator svc knows;
 * every other object is a template (keys kept, values evaluated); `preserve` keeps a literal.
 */
const context = { event: { data: { name: 'Ada', n: 2, tags: ['a', 'b'] } }, nodes: {} };

type Row =
  | { logic: unknown; output: unknown; warning?: string }
  | { logic: unknown; error: string; field: string };

const rows: Row[] = [
  // Operations: one key, a known operator.
  { logic: { var: 'event.data.name' }, output: 'Ada' },
  { logic: { '+': [{ var: 'event.data.n' }, 1] }, output: 3 },
  { logic: { cat: ['Hi ', { var: 'event.data.name' }] }, output: 'Hi Ada' },
  // Templates with one key: the key is kept, the value evaluated (the README's first COMPUTE).
  {
    logic: { text: { cat: ['New folder: ', { var: 'event.data.name' }] } },
    output: { text: 'New folder: Ada' },
  },
  { logic: { a: 1 }, output: { a: 1 } },
  { logic: { total: { '*': [{ var: 'event.data.n' }, 10] } }, output: { total: 20 } },
  // Templates with several keys, nested templates, lists.
  { logic: { a: 1, b: 2 }, output: { a: 1, b: 2 } },
  {
    logic: { user: { name: { var: 'event.data.name' }, meta: { n: { var: 'event.data.n' } } } },
    output: { user: { name: 'Ada', meta: { n: 2 } } },
  },
  { logic: { items: [{ var: 'event.data.n' }, 'x', { k: 1 }] }, output: { items: [2, 'x', { k: 1 }] } },
  // `preserve` keeps what is inside it as it is, expressions included.
  { logic: { preserve: { var: 'event.data.name' } }, output: { var: 'event.data.name' } },
  {
    logic: { headers: { preserve: { authorization: '$secret:t' } } },
    output: { headers: { authorization: '$secret:t' } },
  },
  // `eachKey` is kept as an alias of a template.
  { logic: { eachKey: { total: { '+': [1, 1] } } }, output: { total: 2 } },
  // A template key one typo away from an operator: kept, with a warning naming the operator meant.
  {
    logic: { vr: 'event.data.name' },
    output: { vr: 'event.data.name' },
    warning: 'did you mean the operator "var"?',
  },
  { logic: { out: { iff: [true, 1, 2] } }, output: { out: { iff: [true, 1, 2] } }, warning: '"if"' },
  // Inside an operator's arguments an unknown operator stays an error.
  {
    logic: { if: [{ '==': [1, 1] }, { no_such_op: [1, 2] }, 0] },
    error: 'not a valid JSONLogic expression: at if.1: unknown operator "no_such_op"',
    field: 'nodes.0.config.logic.if.1',
  },
  {
    logic: { msg: { cat: ['x', { vr: 'event.data.name' }] } },
    error: 'unknown operator "vr" (did you mean "var"?)',
    field: 'nodes.0.config.logic.msg.cat.1',
  },
  // Scalars are literals.
  { logic: 42, output: 42 },
  { logic: 'plain', output: 'plain' },
];

describe('the one template rule', () => {
  for (const row of rows) {
    it(`${JSON.stringify(row.logic)}`, () => {
      const warnings: string[] = [];
      const at = { path: 'nodes.0', label: 'nodes.0 (key "c")' };
      if ('error' in row) {
        let thrown: unknown;
        try {
          validateConfig('COMPUTE', { logic: row.logic }, at, warnings);
        } catch (err) {
          thrown = err;
        }
        expect(thrown).toBeInstanceOf(AppError);
        expect((thrown as AppError).message).toContain(row.error);
        expect((thrown as AppError).details).toMatchObject({ field: row.field });
        return;
      }
      validateConfig('COMPUTE', { logic: row.logic }, at, warnings);
      if (row.warning) {
        expect(warnings).toHaveLength(1);
        expect(warnings[0]).toContain(row.warning);
      } else {
        expect(warnings).toEqual([]);
      }
      expect(compileMapping(row.logic, 'logic', '')(context)).toEqual(row.output);
    });
  }
});
