import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyPatch, diff, mergePatch, PatchError } from '../../src/areas/questionnaires/json-patch.js';
import type { PatchOperation } from '../../src/areas/questionnaires/records.js';
import { dialectName } from '../helpers/store.js';

interface Vector {
  comment?: string;
  doc: unknown;
  patch: PatchOperation[];
  expected?: unknown;
  error?: string;
  disabled?: boolean;
}

const load = (file: string): Vector[] =>
  JSON.parse(readFileSync(new URL(`../vectors/json-patch/${file}`, import.meta.url), 'utf8'));

/**
 * The revision diffs are RFC 6902 patches applied with fast-json-patch through our wrapper; the
 * json-patch-tests vectors (test/vectors/json-patch) check both against the RFC.
 */
describe(`RFC 6902 patches (${dialectName})`, () => {
  for (const file of ['tests.json', 'spec_tests.json']) {
    const vectors = load(file).filter((v) => !v.disabled && ('expected' in v || 'error' in v));

    it(`${file}: every enabled vector (${vectors.length}) gives the expected document or an error`, () => {
      expect(vectors.length).toBeGreaterThan(10);
      for (const [i, v] of vectors.entries()) {
        const label = `${file}#${i} ${v.comment ?? ''}`;
        const before = JSON.stringify(v.doc);
        if ('expected' in v) {
          expect(applyPatch(v.doc, v.patch), label).toEqual(v.expected);
        } else {
          expect(() => applyPatch(v.doc, v.patch), label).toThrow(PatchError);
        }
        // Never a partial result: the input document is untouched either way.
        expect(JSON.stringify(v.doc), label).toBe(before);
      }
    });
  }

  it('diff then apply gives back the target document (property)', () => {
    // JSON round-trip (as stored); prototype-polluting keys are refused by the HTTP parser, so left out.
    const safe = (v: unknown) => !/"(__proto__|constructor|prototype)"/.test(JSON.stringify(v));
    const json = fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.parse(JSON.stringify(v)));
    const object = fc
      .dictionary(fc.string({ maxLength: 6 }), json, { maxKeys: 6 })
      .map((v) => JSON.parse(JSON.stringify(v)) as Record<string, unknown>)
      .filter(safe);
    fc.assert(
      fc.property(object, object, (from, to) => {
        expect(applyPatch(from, diff(from, to))).toEqual(to);
      }),
      { numRuns: 300 },
    );
  });

  it('merges config layers with JSON Merge Patch (RFC 7396)', () => {
    // The examples of RFC 7396 Appendix A that start from an object.
    const cases: Array<[Record<string, unknown>, Record<string, unknown>, Record<string, unknown>]> = [
      [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
      [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
      [{ a: 'b' }, { a: null }, {}],
      [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
      [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
      [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
      [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
      [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
      [{ e: null }, { a: 1 }, { e: null, a: 1 }],
      [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
    ];
    for (const [target, patch, result] of cases) {
      const copy = JSON.stringify(target);
      expect(mergePatch(target, patch)).toEqual(result);
      expect(JSON.stringify(target)).toBe(copy);
    }
  });
});
