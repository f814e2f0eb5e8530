import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './helpers/app.js';
import { hasBrowser, launchBrowser } from './helpers/browser.js';

/** The /docs page in a real browser: svc's name and guide, operations by summary, working deep links. */
describe.skipIf(!hasBrowser)('the API reference page at /docs', () => {
  let t: TestApp;
  let browser: Browser;
  let base: string;
  beforeAll(async () => {
    t = await startTestApp();
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await t.close();
  });

  it('carries svc name and guide, lists operations by summary, and loads nothing from elsewhere', async () => {
    const page = await browser.newPage();
    const foreign: string[] = [];
    page.on('request', (r) => {
      if (!r.url().startsWith(base) && !r.url().startsWith('data:')) foreign.push(r.url());
    });
    await page.goto(`${base}/docs/`);
    await page.waitForSelector('.opblock-summary-description');
    expect(await page.title()).toBe('svc API reference');
    const text = await page.locator('.information-container').innerText();
    expect(text).toContain('Getting started');
    expect(text).toContain('POST /api/v1/auth/login/credentials');
    // Operations show their summaries (Swagger UI renders the ones in view first).
    const signIn = page.locator('.opblock-summary-description', {
      hasText: /^Sign in with email and password$/,
    });
    await signIn.waitFor();
    expect(await signIn.count()).toBe(1);
    // The top bar's logo is svc's, not Swagger's.
    const logo = await page.locator('.topbar a img').getAttribute('src');
    expect(logo ?? '').not.toContain('swagger');
    expect(foreign).toEqual([]);
    await page.close();
  });

  it('a deep link opens its operation', async () => {
    const page = await browser.newPage();
    await page.goto(`${base}/docs/#/users/getUser`);
    const open = page.locator('.opblock.is-open');
    await open.waitFor();
    expect(await open.locator('.opblock-summary-path').innerText()).toContain('/api/v1/user/{id}');
    expect(await open.innerText()).toContain('user:read');
    await page.close();
  });
});
