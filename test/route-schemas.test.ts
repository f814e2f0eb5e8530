import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileValidator } from '../src/app/validation.js';
import { ErrorBody } from '../src/http/schemas.js';
import { startTestApp, type TestApp } from './helpers/app.js';

const PARTS = ['body', 'querystring', 'params', 'headers'] as const;

/**
 * svc compiles a route's validators and serializers on its first request, not at start (memory:
 * docs/performance.md). A schema that cannot compile would then fail a request instead of the start,
 * so this compiles every part of every route here, as Fastify would.
 */
describe('route schemas', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('every request part of every route compiles, and its validator answers', () => {
    let compiled = 0;
    for (const route of t.routes) {
      for (const part of PARTS) {
        const schema = route.schema[part] as object | undefined;
        if (!schema) continue;
        const validate = compileValidator({ schema, httpPart: part });
        // The first call compiles; a refusal comes with errors to report (a few bodies take any value).
        const ok = validate(Symbol('not JSON'));
        expect(typeof ok, `${route.method} ${route.url} ${part}`).toBe('boolean');
        if (!ok) expect(validate.errors?.length).toBeGreaterThan(0);
        else expect(validate.errors ?? null).toBeNull();
        compiled++;
      }
    }
    expect(compiled).toBeGreaterThan(150);
  });

  it('every response schema of every route compiles to a serializer', () => {
    const compile = SerializerSelector()({ [ErrorBody.$id as string]: ErrorBody }, {});
    let compiled = 0;
    for (const { method, url, schema } of t.routes) {
      const responses = (schema.response ?? {}) as Record<string, unknown>;
      for (const [httpStatus, response] of Object.entries(responses)) {
        const serialize = compile({ schema: response, method, url, httpStatus } as never);
        expect(typeof serialize, `${method} ${url} ${httpStatus}`).toBe('function');
        compiled++;
      }
    }
    expect(compiled).toBeGreaterThan(300);
  });
});
