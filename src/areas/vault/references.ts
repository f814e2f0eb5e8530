/**
 * Vault references as text (SPEC Vault references), and the one rule that keeps resolved secrets out
 * of what leaves the service: pure functions, shared by the vault's resolver, the plugin invocation
 * path and the workflow engine.
 */
import { MASK } from './schemas.js';

/** A whole-string reference; key characters `[a-zA-Z0-9_]`. Group 1 is the kind, group 2 the key. */
export const REFERENCE_PATTERN = '^\\$(secret|var):([a-zA-Z0-9_]+)$';
export const REFERENCE = new RegExp(REFERENCE_PATTERN);
const SECRET_REFERENCE = /^\$secret:[a-zA-Z0-9_]+$/;

export const isReference = (value: unknown): value is string =>
  typeof value === 'string' && REFERENCE.test(value);

/**
 * The values that the `$secret:` references of `input` resolved to in `resolved` (the same value
 * after resolveReferences), plus `extra`: distinct, non-empty, longest first (so masking is greedy).
 * `$var:` values are plaintext the vault answers to any reader, so they are not masked: masking a
 * short variable like "eu" everywhere it occurs would mangle unrelated output.
 */
export function secretValues(input: unknown, resolved: unknown, extra: readonly string[] = []): string[] {
  const out = new Set(extra.filter((v) => v.length > 0));
  const walk = (a: unknown, b: unknown) => {
    if (typeof a === 'string') {
      if (SECRET_REFERENCE.test(a) && typeof b === 'string' && b.length > 0 && b !== a) out.add(b);
    } else if (Array.isArray(a) && Array.isArray(b)) {
      for (let i = 0; i < a.length; i++) walk(a[i], b[i]);
    } else if (a && typeof a === 'object' && b && typeof b === 'object') {
      for (const [k, v] of Object.entries(a)) walk(v, (b as Record<string, unknown>)[k]);
    }
  };
  walk(input, resolved);
  return [...out].sort((x, y) => y.length - x.length);
}

/**
 * `value` with every occurrence of a value in `secrets` (longest first), also inside a longer string
 * or an object key, replaced by the mask. Copy-on-write: what holds no secret is answered as it is,
 * and with no secrets at all nothing is walked.
 */
export function maskSecrets<T>(value: T, secrets: readonly string[]): T {
  if (secrets.length === 0) return value;
  const text = (s: string) => {
    let out = s;
    for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join(MASK);
    return out;
  };
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return text(v);
    if (Array.isArray(v)) {
      let out: unknown[] | undefined;
      v.forEach((item, i) => {
        const next = walk(item);
        if (next !== item) {
          out ??= v.slice();
          out[i] = next;
        }
      });
      return out ?? v;
    }
    if (v !== null && typeof v === 'object') {
      let changed = false;
      const entries = Object.entries(v).map(([k, item]) => {
        const key = text(k);
        const next = walk(item);
        if (key !== k || next !== item) changed = true;
        return [key, next] as const;
      });
      return changed ? Object.fromEntries(entries) : v;
    }
    return v;
  };
  return walk(value) as T;
}
