import type { FastifyRequest } from 'fastify';
import type { App } from './app.js';
import { AppError } from './errors.js';

/** Deepest nesting of arrays and objects a JSON body may have. */
const MAX_JSON_DEPTH = 128;

export const nulCharacter = () =>
  new AppError('VALIDATION_ERROR', 'Request contains a NUL (U+0000) character');

type Done = (err: Error | null, body?: unknown) => void;

/**
 * The one JSON body parser (application/json, and the CloudEvents JSON media types of POST /event):
 * Fastify's own (prototype-poisoning safe) behind two guards. U+0000 cannot be stored in PostgreSQL
 * text, so a string holding it is a 400, not a 500 from the store later; recursive code
 * (JSON.stringify included) overflows the stack near 4,000 levels, so a body nested deeper than any
 * document needs is refused before it is parsed.
 */
export function hardenedJsonParser(app: App) {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  return (request: FastifyRequest, body: string | Buffer, done: Done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    // Many clients send Content-Type: application/json on every request, a DELETE without a body
    // too: an empty body is no body (a route that needs one still answers 400 from its schema).
    if (text.length === 0) return done(null, undefined);
    if (nestedDeeperThan(text, MAX_JSON_DEPTH)) {
      return done(
        new AppError('VALIDATION_ERROR', `Request body is nested more than ${MAX_JSON_DEPTH} levels deep`),
        undefined,
      );
    }
    parseJson(request, text, (err, value) => {
      // Raw JSON can hold U+0000 only as the escape \u0000; walk the value only when that text appears.
      if (!err && text.includes('\\u0000') && holdsNul(value)) return done(nulCharacter(), undefined);
      done(err, value);
    });
  };
}

/** Whether the JSON text opens more than `max` arrays or objects inside each other (strings skipped). */
function nestedDeeperThan(text: string, max: number): boolean {
  // Nesting past `max` takes more than `max` opening brackets: most bodies end the check here.
  if (text.length <= max) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \\ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 /* { */ || c === 91 /* [ */) {
      if (++depth > max) return true;
    } else if (c === 125 /* } */ || c === 93 /* ] */) depth--;
  }
  return false;
}

/** Whether a parsed value holds U+0000 in a string or a key. */
export function holdsNul(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (Array.isArray(value)) return value.some(holdsNul);
  if (value && typeof value === 'object') {
    return Object.entries(value).some(([k, v]) => k.includes('\u0000') || holdsNul(v));
  }
  return false;
}
