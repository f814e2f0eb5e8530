/**
 * Vault references as text (docs/vault.md "References"), and the one rule that keeps resolved secrets out
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

/** Shorter encoded fragments are not masked: they would match unrelated text too often. */
const MIN_VARIANT_LENGTH = 6;

/**
 * The spellings of a secret a plugin may echo back: as is (any letter case), percent-encoded (URL
 * component and form), hex (any case), base64 and base64url with and without padding, and the base64
 * runs that any text containing the secret encodes to (a Basic auth header holds `user:secret`): for
 * each of the three byte alignments, the characters whose bits come from the secret alone.
 * What is not covered (documented in docs/vault.md): other encodings, encryption or hashing by the
 * plugin, and fragments (a plugin echoing half a secret).
 */
function spellings(secret: string): { exact: string[]; anyCase: string[] } {
  const bytes = Buffer.from(secret, 'utf8');
  const exact = new Set<string>();
  const anyCase = new Set<string>([secret, encodeURIComponent(secret), bytes.toString('hex')]);
  anyCase.add(new URLSearchParams({ v: secret }).toString().slice(2));
  for (const encoding of ['base64', 'base64url'] as const) {
    exact.add(bytes.toString(encoding));
    exact.add(bytes.toString(encoding).replace(/=+$/, ''));
    for (let k = 0; k <= 2; k++) {
      const full = Buffer.concat([Buffer.alloc(k), bytes]).toString(encoding);
      exact.add(full.slice(Math.ceil((8 * k) / 6), Math.floor((8 * k + 8 * bytes.length) / 6)));
    }
  }
  const keep = (v: string) => v.length >= MIN_VARIANT_LENGTH || v === secret;
  return { exact: [...exact].filter(keep), anyCase: [...anyCase].filter(keep) };
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * `value` with every occurrence of a value in `secrets` (longest first), or of one of its spellings
 * (see `spellings`), also inside a longer string or an object key, replaced by the mask.
 * Copy-on-write: what holds no secret is answered as it is, and with no secrets nothing is walked.
 */
export function maskSecrets<T>(value: T, secrets: readonly string[]): T {
  if (secrets.length === 0) return value;
  const exact = new Set<string>();
  const anyCase = new Set<string>();
  for (const secret of secrets) {
    const s = spellings(secret);
    for (const v of s.exact) exact.add(v);
    for (const v of s.anyCase) anyCase.add(v);
  }
  // Longest first, so a longer spelling is masked whole before a shorter one could split it.
  const byLength = (a: string, b: string) => b.length - a.length;
  const patterns = [...anyCase].sort(byLength).map((v) => new RegExp(escapeRegExp(v), 'gi'));
  const literals = [...exact].sort(byLength);
  const text = (s: string) => {
    let out = s;
    for (const re of patterns) out = out.replace(re, MASK);
    for (const literal of literals) if (out.includes(literal)) out = out.split(literal).join(MASK);
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
