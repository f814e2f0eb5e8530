/**
 * Form fields from a JSON Schema, for plugin instance configs (`instance_config_schema`) and action
 * payloads (`input_schema`). Written here rather than taken from a form library: those pull a
 * validator and a component kit far past the console's size budget, and the server validates anyway
 * (its 400 names the field). Top-level properties of an object schema become fields; anything this
 * does not model (nested objects, arrays of objects, oneOf) is a JSON field.
 */
export type FieldKind = 'string' | 'secret' | 'number' | 'integer' | 'boolean' | 'enum' | 'list' | 'json';

export interface Field {
  name: string;
  label: string;
  kind: FieldKind;
  required: boolean;
  description?: string;
  options?: string[];
  initial: string | boolean;
}

type Schema = {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  enum?: unknown[];
  items?: Schema;
  title?: string;
  description?: string;
  default?: unknown;
  format?: string;
  writeOnly?: boolean;
};

const SECRET_NAME = /(password|secret|token|api_?key)/i;

function kindOf(name: string, s: Schema): FieldKind {
  const type = Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type;
  if (Array.isArray(s.enum) && s.enum.every((v) => typeof v === 'string')) return 'enum';
  if (type === 'string')
    return s.writeOnly || s.format === 'password' || SECRET_NAME.test(name) ? 'secret' : 'string';
  if (type === 'number' || type === 'integer' || type === 'boolean') return type;
  if (type === 'array' && s.items && (s.items.type === 'string' || s.items.type === 'number')) return 'list';
  return 'json';
}

function initialText(kind: FieldKind, value: unknown): string | boolean {
  if (kind === 'boolean') return value === true;
  if (value === undefined || value === null) return '';
  if (kind === 'list' && Array.isArray(value)) return value.join(', ');
  if (kind === 'json') return JSON.stringify(value, null, 2);
  return String(value);
}

/** The fields of an object schema, prefilled from `current` (else the schema's defaults). */
export function fieldsOf(schema: unknown, current: Record<string, unknown> | null = null): Field[] | null {
  const s = (schema ?? {}) as Schema;
  if (!s.properties || typeof s.properties !== 'object') return null;
  const required = new Set(s.required ?? []);
  return Object.entries(s.properties).map(([name, prop]) => {
    const kind = kindOf(name, prop);
    return {
      name,
      label: prop.title ?? name,
      kind,
      required: required.has(name),
      description: prop.description,
      options: kind === 'enum' ? (prop.enum as string[]) : undefined,
      initial: initialText(kind, current?.[name] ?? prop.default),
    };
  });
}

/**
 * The value the fields hold: empty optional fields are left out; numbers, lists and JSON parsed.
 * A field that does not parse is reported by name, and nothing is sent.
 */
export function readFields(
  fields: Field[],
  get: (name: string) => string | boolean,
): { value: Record<string, unknown>; problems: string[] } {
  const value: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const f of fields) {
    const raw = get(f.name);
    if (f.kind === 'boolean') {
      value[f.name] = raw === true;
      continue;
    }
    const text = String(raw).trim();
    if (text === '') continue;
    if (f.kind === 'number' || f.kind === 'integer') {
      const n = Number(text);
      if (!Number.isFinite(n) || (f.kind === 'integer' && !Number.isInteger(n)))
        problems.push(`${f.name}: not ${f.kind === 'integer' ? 'an integer' : 'a number'}`);
      else value[f.name] = n;
    } else if (f.kind === 'list') {
      value[f.name] = text
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean);
    } else if (f.kind === 'json') {
      try {
        value[f.name] = JSON.parse(text);
      } catch {
        problems.push(`${f.name}: not valid JSON`);
      }
    } else {
      value[f.name] = String(raw);
    }
  }
  return { value, problems };
}
