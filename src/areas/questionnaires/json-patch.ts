import jsonPatch from 'fast-json-patch';
import { isPlainObject } from '../../lib/objects.js';
import type { JsonObject, PatchOperation } from './records.js';

/**
 * RFC 6902 diffs and their application, over fast-json-patch. The library is checked against the
 * json-patch-tests vectors (test/questionnaires/json-patch.test.ts); where it is more lenient than
 * RFC 6901 (array indexes with leading zeros on `test`) this wrapper checks first.
 */

/** The RFC 6902 patch that turns `from` into `to`. */
export function diff(from: unknown, to: unknown): PatchOperation[] {
  return jsonPatch.compare(from as object, to as object) as PatchOperation[];
}

export class PatchError extends Error {}

const ARRAY_INDEX = /^(0|[1-9][0-9]*)$/;

/**
 * Applies `patch` to `doc` and returns the result, or throws PatchError. By default `doc` is copied
 * first, so a failing patch leaves no partial result; `inPlace` skips the copy for a caller that owns
 * `doc` and discards it on failure (snapshot replay).
 */
export function applyPatch<T>(doc: T, patch: readonly PatchOperation[], inPlace = false): T {
  let current = inPlace ? doc : (jsonPatch.deepClone(doc) as T);
  for (const op of patch) {
    checkArrayIndexes(current, op.path, op.op === 'add');
    if (op.from !== undefined) checkArrayIndexes(current, op.from, false);
    try {
      current = jsonPatch.applyOperation(current, op as jsonPatch.Operation, true, true, true)
        .newDocument as T;
    } catch (e) {
      throw new PatchError(e instanceof Error ? e.message.split('\n')[0]! : String(e));
    }
  }
  return current;
}

/** RFC 6901: an array index is `0` or digits without a leading zero (`-` only where `add` allows it). */
function checkArrayIndexes(doc: unknown, pointer: string, isAdd: boolean): void {
  if (typeof pointer !== 'string' || pointer === '') return;
  const tokens = pointer.split('/').slice(1);
  let node: unknown = doc;
  for (let i = 0; i < tokens.length && node !== null && typeof node === 'object'; i++) {
    const token = tokens[i]!.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(node)) {
      const last = i === tokens.length - 1;
      if (!(ARRAY_INDEX.test(token) || (token === '-' && last && isAdd))) {
        throw new PatchError(`invalid array index "${token}" in ${pointer}`);
      }
      node = node[Number(token)];
    } else {
      node = (node as Record<string, unknown>)[token];
    }
  }
}

/** JSON Merge Patch (RFC 7396): objects merge key by key, `null` removes a key, anything else replaces. */
export function mergePatch(target: JsonObject, patch: JsonObject): JsonObject {
  const out: JsonObject = { ...target };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else if (isPlainObject(value) && isPlainObject(out[key]))
      out[key] = mergePatch(out[key] as JsonObject, value);
    else if (isPlainObject(value)) out[key] = mergePatch({}, value);
    else out[key] = value;
  }
  return out;
}
