import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

/** Where no console was built (SVC_CONSOLE_DIR an empty folder), /console says how to build it. */
describe('the console route without a build', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-no-console-'));
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { SVC_CONSOLE_DIR: dir } });
  });
  afterAll(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers 404 with the contract body naming `npm run build`; the API is unaffected', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/console/runs' });
    expect(page.statusCode).toBe(404);
    expect(page.json()).toEqual({
      code: 'NOT_FOUND',
      message: 'The console is not built here: run `npm run build`',
    });
    const asset = await t.app.inject({ method: 'GET', url: '/console/assets/index.js' });
    expect(asset.statusCode).toBe(404);
    expect((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });
});
