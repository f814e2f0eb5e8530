/** What every setting's decoding shares: the error that names a variable, URLs and lists. */

export class ConfigError extends Error {}

/** `raw` as a URL of one of `protocols`, or a ConfigError naming `name` (never its credentials). */
export function url(name: string, raw: string | undefined, protocols: string[]): string | undefined {
  if (raw === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    // The value may carry credentials (smtp://user:password@host): never echo them.
    throw new ConfigError(`${name} must be a URL, got "${raw.replace(/\/\/[^/@]*@/, '//***@')}"`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(`${name} must use ${protocols.join(' or ')}, got "${parsed.protocol}"`);
  }
  return raw;
}

/** A comma-separated list, blanks dropped. */
export const list = (raw: string | undefined): string[] =>
  (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
