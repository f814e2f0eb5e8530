import type { LoggerOptions } from 'pino';

/**
 * Field names whose values never reach a log line: credentials in headers, and any field that by its
 * name holds a secret, at any depth of whatever the code logs. Values resolved from the vault are
 * never logged at all.
 */
export const SECRET_FIELDS = [
  'authorization',
  'x-api-key',
  'cookie',
  'set-cookie',
  'password',
  'new_password',
  'current_password',
  'token',
  'access_token',
  'refresh_token',
  'id_token',
  'mfa_token',
  'registration_token',
  'secret',
  'config_json',
] as const;

const CENSOR = '"[REDACTED]"';
const SECRET_KEY_SOURCE = `"(?:${SECRET_FIELDS.join('|')})":`;
/** Whether a line names a secret field at all: most do not, and pass after this one test. */
const NAMES_A_SECRET = new RegExp(SECRET_KEY_SOURCE);

/** Where the JSON value starting at `i` ends (exclusive): a string, an object, an array or a literal. */
function valueEnd(line: string, i: number): number {
  let depth = 0;
  let inString = false;
  for (let j = i; j < line.length; j++) {
    const c = line[j];
    if (inString) {
      if (c === '\\') j++;
      else if (c === '"') {
        inString = false;
        if (depth === 0) return j + 1;
      }
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      if (depth === 0) return j; // the end of the enclosing object: a literal value ended here
      depth--;
      if (depth === 0) return j + 1;
    } else if (c === ',' && depth === 0) return j;
  }
  return line.length;
}

/**
 * Replaces the value of every secret-named field of a finished log line (pino's JSON, one line) with
 * "[REDACTED]", whatever its type and depth. A key can only match where it is a key: inside a string
 * value its quotes are escaped. Most lines name no such field and are answered as they are after one
 * regular-expression scan; pino's own `redact` re-parsed its paths for every property of every line,
 * a cost that showed in the pipeline's profile.
 */
export function redactLine(line: string): string {
  if (!NAMES_A_SECRET.test(line)) return line;
  const keys = new RegExp(SECRET_KEY_SOURCE, 'g');
  let out = '';
  let from = 0;
  for (let m = keys.exec(line); m !== null; m = keys.exec(line)) {
    const start = m.index + m[0].length;
    const end = valueEnd(line, start);
    out += line.slice(from, start) + CENSOR;
    from = end;
    keys.lastIndex = end; // keys inside the replaced value are gone with it
  }
  return out + line.slice(from);
}

export function loggerOptions(level: string): LoggerOptions {
  return { level, hooks: { streamWrite: redactLine } };
}
