import { describe, expect, it } from 'vitest';
import { fieldsOf, readFields } from '../src/ui/schema-form';

const schema = {
  type: 'object',
  required: ['base_url', 'method'],
  properties: {
    base_url: { type: 'string', format: 'uri', description: 'where requests go' },
    method: { type: 'string', enum: ['GET', 'POST'] },
    api_token: { type: 'string' },
    retries: { type: 'integer', default: 3 },
    ratio: { type: ['number', 'null'] },
    verbose: { type: 'boolean' },
    tags: { type: 'array', items: { type: 'string' } },
    headers: { type: 'object', additionalProperties: { type: 'string' } },
  },
};

describe('forms generated from JSON Schema', () => {
  it('makes one field per property, of the kind its schema says, prefilled from the value or the default', () => {
    const fields = fieldsOf(schema, { method: 'POST', tags: ['a', 'b'], headers: { x: '1' } })!;
    expect(fields.map((f) => [f.name, f.kind, f.required, f.initial])).toEqual([
      ['base_url', 'string', true, ''],
      ['method', 'enum', true, 'POST'],
      ['api_token', 'secret', false, ''],
      ['retries', 'integer', false, '3'],
      ['ratio', 'number', false, ''],
      ['verbose', 'boolean', false, false],
      ['tags', 'list', false, 'a, b'],
      ['headers', 'json', false, '{\n  "x": "1"\n}'],
    ]);
    expect(fields[1].options).toEqual(['GET', 'POST']);
    expect(fields[0].description).toBe('where requests go');
  });

  it('has no fields for a schema that is not an object of properties (the form falls back to JSON)', () => {
    expect(fieldsOf({ type: 'array' })).toBeNull();
    expect(fieldsOf(undefined)).toBeNull();
  });

  it('reads the value back: empty optional fields left out, numbers, lists and JSON parsed, problems named', () => {
    const fields = fieldsOf(schema)!;
    const form: Record<string, string | boolean> = {
      base_url: 'https://x.example',
      method: 'GET',
      api_token: '$secret:token',
      retries: '5',
      ratio: '',
      verbose: true,
      tags: 'a, b,,c',
      headers: '{"y":"2"}',
    };
    expect(readFields(fields, (n) => form[n])).toEqual({
      value: {
        base_url: 'https://x.example',
        method: 'GET',
        api_token: '$secret:token',
        retries: 5,
        verbose: true,
        tags: ['a', 'b', 'c'],
        headers: { y: '2' },
      },
      problems: [],
    });
    const broken: Record<string, string | boolean> = { ...form, retries: '2.5', headers: '{nope' };
    const bad = readFields(fields, (n) => broken[n]);
    expect(bad.problems).toEqual(['retries: not an integer', 'headers: not valid JSON']);
  });
});
