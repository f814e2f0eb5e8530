import { describe, expect, it } from 'vitest';
import { availablePaths, getPath, pathsFromSchema } from '../../src/areas/workflows/paths.js';
import { parseTemplate, renderTemplate, TemplateError } from '../../src/areas/workflows/template.js';

describe('available_paths', () => {
  it('lists every dot path; lists of objects are merged by key, without indices', () => {
    const paths = availablePaths({
      event: {
        id: 'e',
        data: {
          items: [
            { sku: 'a', qty: 1 },
            { sku: 'b', price: { eur: 2 } },
          ],
          tags: ['x', 'y'],
        },
      },
      nodes: { n1: { output: { result: 3 } } },
    });
    expect(paths).toEqual([
      'event',
      'event.id',
      'event.data',
      'event.data.items',
      'event.data.items.sku',
      'event.data.items.qty',
      'event.data.items.price',
      'event.data.items.price.eur',
      'event.data.tags',
      'nodes',
      'nodes.n1',
      'nodes.n1.output',
      'nodes.n1.output.result',
    ]);
    expect(paths.some((p) => /\.\d+(\.|$)/.test(p))).toBe(false);
  });

  it('comes from an event definition data schema before any event exists', () => {
    const schema = {
      type: 'object',
      properties: {
        submission_id: { type: 'string' },
        answers: {
          type: 'object',
          properties: { scoring: { type: 'object', properties: { total: { type: 'number' } } } },
        },
        items: { type: 'array', items: { type: 'object', properties: { sku: { type: 'string' } } } },
      },
      allOf: [{ properties: { extra: { type: 'string' } } }],
    };
    expect(pathsFromSchema(schema, 'event.data')).toEqual([
      'event.data.extra',
      'event.data.submission_id',
      'event.data.answers',
      'event.data.answers.scoring',
      'event.data.answers.scoring.total',
      'event.data.items',
      'event.data.items.sku',
    ]);
  });

  it('reads dot paths through own properties only', () => {
    expect(getPath({ a: { b: [1, { c: 2 }] } }, 'a.b.1.c')).toBe(2);
    expect(getPath({ a: {} }, 'a.constructor')).toBeUndefined();
  });
});

describe('until_template', () => {
  const now = new Date('2026-03-01T10:00:00.000Z');
  const ctx = {
    event: {
      time: '2026-03-01T09:00:00Z',
      data: { at: '2026-03-05T08:30:00+02:00', day: '2026-03-09', ms: 1772400000000 },
    },
    nodes: { plan: { output: { when: '2026-04-01T00:00:00Z' } } },
  };
  const render = (t: string) => renderTemplate(parseTemplate(t), ctx, now);

  it.each([
    ['2026-05-01T09:00:00Z', '2026-05-01T09:00:00.000Z'],
    ['{{ event.data.at }}', '2026-03-05T06:30:00.000Z'],
    ['{{ event.data.at - 1h }}', '2026-03-05T05:30:00.000Z'],
    ['{{ now + 15m }}', '2026-03-01T10:15:00.000Z'],
    ['{{now+1d-30s}}', '2026-03-02T09:59:30.000Z'],
    ['{{ event.data.day }}T09:00:00Z', '2026-03-09T09:00:00.000Z'],
    ['{{ nodes.plan.output.when + 500ms }}', '2026-04-01T00:00:00.500Z'],
    ['{{ event.data.ms + 1s }}', new Date(1772400001000).toISOString()],
  ])('renders %j', (template, expected) => {
    expect(render(template).at.toISOString()).toBe(expected);
  });

  it.each([
    ['{{ event..x }}', 'invalid placeholder'],
    ['{{ event.time + 5y }}', 'invalid duration'],
    ['{{ event.time', 'unbalanced'],
    ['', 'empty'],
    ['{{ a[0] }}', 'invalid placeholder'],
  ])('refuses to parse %j', (template, message) => {
    expect(() => parseTemplate(template)).toThrow(TemplateError);
    expect(() => parseTemplate(template)).toThrow(message);
  });

  it.each([
    ['{{ event.data.missing }}', 'event.data.missing has no value'],
    ['{{ event.data }}', 'is not text or a number'],
    ['{{ event.data.day + 1h }}', 'is not a timestamp'],
    ['tomorrow', 'not an RFC 3339 timestamp'],
    ['{{ event.data.day }}', 'not an RFC 3339 timestamp'],
  ])('fails to render %j with a reason', (template, message) => {
    expect(() => render(template)).toThrow(message);
  });
});
