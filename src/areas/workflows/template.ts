/**
 * DELAY `until_template` (docs/workflows.md "DELAY and until_template"): text with `{{ ... }}` placeholders that
 * must render an RFC 3339 timestamp.
 *
 *   placeholder := "{{" ws source (ws ("+" | "-") ws duration)* ws "}}"
 *   source      := "now" | dot path into the context (event..., nodes.<key>.output...)
 *   duration    := integer ("ms" | "s" | "m" | "h" | "d")
 *
 * Without an offset the value is inserted as text (strings and numbers only). With an offset the value
 * must be a timestamp (RFC 3339 text, or epoch milliseconds) and the placeholder renders the shifted
 * instant as ISO-8601 UTC. Examples: `{{ event.data.appointment_at - 1h }}`, `{{ now + 15m }}`,
 * `{{ event.data.date }}T09:00:00Z`.
 */
import { getPath } from './paths.js';

export class TemplateError extends Error {
  override readonly name = 'TemplateError';
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const PLACEHOLDER = /\{\{(.*?)\}\}/g;
const SOURCE = /^(now|[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*)$/;
const OFFSET = /^([+-])\s*(\d{1,12})(ms|s|m|h|d)$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:[Zz]|[+-]\d{2}:\d{2})$/;

interface Placeholder {
  source: string;
  offsetMs: number;
  hasOffset: boolean;
}

export type TemplatePart = string | Placeholder;

/** Parses a template; throws TemplateError naming the bad placeholder. */
export function parseTemplate(template: string): TemplatePart[] {
  const parts: TemplatePart[] = [];
  let last = 0;
  for (const m of template.matchAll(PLACEHOLDER)) {
    if (m.index > last) parts.push(template.slice(last, m.index));
    parts.push(parsePlaceholder(m[1]));
    last = m.index + m[0].length;
  }
  if (last < template.length) parts.push(template.slice(last));
  const literal = parts.filter((p) => typeof p === 'string').join('');
  if (literal.includes('{{') || literal.includes('}}')) {
    throw new TemplateError('unbalanced "{{" or "}}" in until_template');
  }
  if (parts.length === 0) throw new TemplateError('until_template is empty');
  return parts;
}

function parsePlaceholder(body: string): Placeholder {
  const tokens = body.trim().match(/^([^\s+-]+)((?:\s*[+-]\s*\d+[a-z]+)*)\s*$/);
  if (!tokens || !SOURCE.test(tokens[1])) {
    throw new TemplateError(
      `invalid placeholder "{{${body}}}": expected "now" or a dot path, optionally ± durations`,
    );
  }
  let offsetMs = 0;
  let hasOffset = false;
  for (const o of tokens[2].match(/[+-]\s*\d+[a-z]+/g) ?? []) {
    const m = o.match(OFFSET);
    if (!m) throw new TemplateError(`invalid duration "${o.trim()}" in "{{${body}}}": use ms, s, m, h or d`);
    offsetMs += (m[1] === '-' ? -1 : 1) * Number(m[2]) * UNIT_MS[m[3]];
    hasOffset = true;
  }
  return { source: tokens[1], offsetMs, hasOffset };
}

function toInstant(value: unknown, source: string): number {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value === 'string' && RFC3339.test(value)) {
    const t = Date.parse(value);
    if (!Number.isNaN(t)) return t;
  }
  throw new TemplateError(
    `${source} is not a timestamp (RFC 3339 text or epoch milliseconds), so it cannot be offset`,
  );
}

/** Renders against the context; returns the instant. Throws TemplateError with a readable reason. */
export function renderTemplate(
  parts: TemplatePart[],
  context: unknown,
  now: Date,
): { text: string; at: Date } {
  let text = '';
  for (const part of parts) {
    if (typeof part === 'string') {
      text += part;
      continue;
    }
    const value = part.source === 'now' ? now.toISOString() : getPath(context, part.source);
    if (value === undefined || value === null) throw new TemplateError(`${part.source} has no value`);
    if (part.hasOffset) {
      text += new Date(toInstant(value, part.source) + part.offsetMs).toISOString();
    } else if (typeof value === 'string' || typeof value === 'number') {
      text += String(value);
    } else {
      throw new TemplateError(`${part.source} is not text or a number`);
    }
  }
  const at = Date.parse(text);
  if (!RFC3339.test(text) || Number.isNaN(at)) {
    throw new TemplateError(
      `until_template rendered "${text.slice(0, 100)}", which is not an RFC 3339 timestamp`,
    );
  }
  return { text, at: new Date(at) };
}
