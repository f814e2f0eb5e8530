import { createHash } from 'node:crypto';

/**
 * The serialisation `config_hash` is computed over (docs/plugins.md): JSON as `JSON.stringify` writes
 * it (no whitespace, the same string and number forms), with the keys of every object sorted by
 * UTF-16 code units, recursively. Array order is kept. `null` (no config) serialises as `null`.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj)
    .filter((k) => obj[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(',')}}`;
}

/** Lower-case hex SHA-256 of the UTF-8 bytes of `canonicalJson(config)`. */
export function configHash(config: unknown): string {
  return createHash('sha256').update(canonicalJson(config), 'utf8').digest('hex');
}
