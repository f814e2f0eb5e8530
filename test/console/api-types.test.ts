import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GENERATED, generateConsoleApi } from '../../scripts/console-api.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

/** The console's typed client is generated from the OpenAPI document; a stale copy fails here. */
describe("the console's generated API types", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('match what `npm run console:api` makes from the current OpenAPI document', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    const files = await generateConsoleApi(doc);
    expect(readFileSync(GENERATED.schema, 'utf8'), 'run npm run console:api').toBe(files.schema);
    expect(readFileSync(GENERATED.access, 'utf8'), 'run npm run console:api').toBe(files.access);
  });
});
