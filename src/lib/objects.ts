/**
 * A plain object: what JSON's `{...}` parses to (its prototype is Object's, or none). Arrays, null,
 * class instances (Date, Buffer) and functions are not. The one test of it in svc.
 */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
