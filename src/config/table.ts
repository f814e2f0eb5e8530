import { configVariables } from './schema.js';

/** Where the README's configuration table starts and ends (generated: `npm run docs:config`). */
export const TABLE_START =
  '<!-- configuration table: generated from src/config/schema.ts by `npm run docs:config` -->';
export const TABLE_END = '<!-- end of the configuration table -->';

/** The README's configuration table, one row per variable of the schema, in its order. */
export function renderConfigTable(): string {
  const rows = configVariables().map(([name, schema]) => {
    const dflt =
      schema.default !== undefined ? `\`${String(schema.default)}\`` : (schema.defaultText ?? 'none');
    const range = schema.type === 'integer' ? `; ${schema.minimum} to ${schema.maximum}` : '';
    return `| \`${name}\` | ${dflt} | ${schema.description}${range} |`;
  });
  return ['| variable | default | meaning |', '|---|---|---|', ...rows].join('\n');
}

/** `readme` with its configuration table replaced by the generated one. */
export function withConfigTable(readme: string): string {
  const start = readme.indexOf(TABLE_START);
  const end = readme.indexOf(TABLE_END);
  if (start < 0 || end < start) throw new Error('README.md has no configuration table markers');
  return `${readme.slice(0, start + TABLE_START.length)}\n${renderConfigTable()}\n${readme.slice(end)}`;
}
