import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Secret, TOTP } from 'otpauth';
import type { Browser, Page, Response } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasBrowser, launchBrowser } from '../helpers/browser.js';
import { ADMIN, type ConsoleServer, startConsoleServer } from '../helpers/console.js';

/** Screenshots of the main screens, written by every run (never committed; docs/console.md). */
export const SHOTS = fileURLToPath(new URL('../../.console-screenshots/', import.meta.url));

const EVENT_TYPE = 'com.example.console.order';
const GRAPH = {
  nodes: [
    {
      key: 'derive',
      type: 'COMPUTE',
      config: {
        logic: { total: { var: 'event.data.total' }, doubled: { '*': [{ var: 'event.data.total' }, 2] } },
      },
    },
    {
      key: 'label',
      type: 'COMPUTE',
      config: { logic: { cat: ['order:', { var: 'nodes.derive.output.doubled' }] } },
    },
    { key: 'done', type: 'END' },
  ],
  edges: [
    { from_node_id: 'derive', to_node_id: 'label' },
    { from_node_id: 'label', to_node_id: 'done' },
  ],
};

/**
 * The console in a real browser (Debian's chromium through playwright-core) against a real `svc
 * serve` with its worker: sign in, build and test a graph, publish a real event, watch its run.
 */
describe.skipIf(!hasBrowser)('the console at /console', () => {
  let server: ConsoleServer;
  let browser: Browser;
  // A receiver for webhooks and the http plugin: answers 500 until told to recover.
  let receiver: Server;
  let receiverUrl = '';
  let receiverHealthy = false;
  const received: string[] = [];
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    receiver = createServer((req, res) => {
      received.push(`${req.method} ${req.url}`);
      req.resume();
      req.on('end', () =>
        res.writeHead(receiverHealthy || req.url === '/ping' ? 200 : 500).end('{"ok":true}'),
      );
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    // Failed webhook attempts are retried at once, so a delivery fails for good within the test.
    server = await startConsoleServer({
      SVC_WEBHOOK_BACKOFF_BASE_SECONDS: '0',
      SVC_WEBHOOK_RETRY_INTERVAL_MS: '100',
    });
    browser = await launchBrowser();
    const type = await server.api('POST', '/event_definition', {
      event_type: EVENT_TYPE,
      description: 'An order, for the console tests',
      data_schema: { type: 'object', properties: { total: { type: 'number' } }, required: ['total'] },
      examples: [
        { specversion: '1.0', id: 'order-1', source: '/shop', type: EVENT_TYPE, data: { total: 21 } },
      ],
    });
    expect(type.status).toBe(200);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    receiver?.close();
  });

  /** A page that records every response it received, to prove secrets never reached it. */
  async function openPage(
    width = 1280,
    height = 800,
  ): Promise<{ page: Page; bodies: string[]; errors: string[] }> {
    const page = await browser.newPage({ viewport: { width, height }, colorScheme: 'light' });
    const bodies: string[] = [];
    page.on('response', (res: Response) => {
      if (res.url().includes('/api/'))
        res.text().then(
          (t) => bodies.push(t),
          () => {},
        );
    });
    // What the page itself reports: script errors, and anything the Content-Security-Policy blocked.
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    page.on('console', (msg) => {
      if (msg.type() === 'error') errors.push(msg.text());
    });
    return { page, bodies, errors };
  }

  async function signIn(page: Page): Promise<void> {
    await page.goto(`${server.base}/console/`);
    await page.getByLabel('Email').fill(ADMIN.email);
    await page.getByLabel('Password').fill(ADMIN.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'main' }).waitFor();
  }

  /**
   * Holds the answers to GETs of `path` until `release` is called, then lets them through: the
   * screen re-renders with its list after the user typed, as on a slow network. Fields that
   * re-rendering wiped lost the typed text (test/console/form-fields.test.ts).
   */
  async function holdList(page: Page, path: string): Promise<() => Promise<void>> {
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const matches = (url: URL) => url.pathname === path;
    await page.route(matches, async (route) => {
      await released;
      await route.continue();
    });
    return async () => {
      const answered = page.waitForResponse((res) => matches(new URL(res.url())));
      release();
      await answered;
      await page.unroute(matches);
    };
  }

  /** A subscription with this graph, an event for it, and its run once completed (all over the API). */
  async function completedRun(name: string, graph: { nodes: unknown[]; edges: unknown[] }): Promise<string> {
    const sub = await server.api('POST', '/event_subscription', { name, event_type: EVENT_TYPE });
    expect(sub.status).toBe(200);
    expect((await server.api('PUT', `/event_subscription/${sub.body.id}/graph`, graph)).status).toBe(200);
    const event = {
      specversion: '1.0',
      id: `order-${name}`,
      source: '/shop',
      type: EVENT_TYPE,
      data: { total: 1 },
    };
    expect((await server.api('POST', '/event', event)).status).toBe(202);
    await expect
      .poll(
        async () => {
          const runs = await server.api('GET', `/workflow_run?event_subscription_id=${sub.body.id}`);
          return runs.body.runs[0]?.status;
        },
        { timeout: 30_000 },
      )
      .toBe('completed');
    return sub.body.id;
  }

  it('is served with a strict CSP, immutable hashed assets, pre-compressed, and a fallback to the page', async () => {
    const page = await fetch(`${server.base}/console/runs/some-id`);
    expect(page.status).toBe(200);
    expect(page.headers.get('cache-control')).toBe('no-cache');
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    const html = await page.text();
    const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const asset = await fetch(`${server.base}${script}`, { headers: { 'accept-encoding': 'br' } });
    expect(asset.status).toBe(200);
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(asset.headers.get('content-encoding')).toBe('br');
    expect((await fetch(`${server.base}/console/assets/nothing.js`)).status).toBe(404);
    const redirect = await fetch(`${server.base}/console`, { redirect: 'manual' });
    expect(redirect.status).toBe(301);
    expect(redirect.headers.get('location')).toBe('/console/');
  });

  it('signs in with the refresh token only in an HttpOnly cookie, and a reload keeps the session', async () => {
    const { page, bodies } = await openPage();
    await signIn(page);
    expect(await page.evaluate('document.cookie')).not.toContain('svc_refresh');
    const cookies = await page.context().cookies();
    const refresh = cookies.find((c) => c.name === 'svc_refresh');
    expect(refresh).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/api/v1/auth' });
    expect(bodies.join('\n')).not.toContain(refresh!.value);
    expect(bodies.join('\n')).not.toContain('"refresh_token"');
    await page.reload();
    await page.getByRole('navigation', { name: 'main' }).waitFor();
    expect(await page.getByRole('link', { name: 'Subscriptions' }).count()).toBe(1);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await page.reload();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await page.close();
  });

  it('signs in a user with MFA: password, then the authenticator code', async () => {
    const email = 'mfa-user@example.test';
    const password = 'mfa-user-password-1';
    expect((await server.api('POST', '/user', { email, password })).status).toBe(200);
    const post = async (path: string, body: unknown, token?: string, method = 'POST') => {
      const res = await fetch(`${server.base}/api/v1${path}`, {
        method,
        headers: {
          'content-type': 'application/json',
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        body: JSON.stringify(body),
      });
      return (await res.json()) as Record<string, string>;
    };
    const { access_token } = await post('/auth/login/credentials', { email, password });
    const { secret } = await post('/auth/mfa/setup', {}, access_token);
    const totp = new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' });
    expect((await post('/auth/mfa/verify', { code: totp.generate() }, access_token)).verified).toBe(true);
    expect((await post('/auth/mfa/enable', { enabled: true }, access_token, 'PATCH')).mfa_enabled).toBe(true);

    const { page } = await openPage();
    await page.goto(`${server.base}/console/`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    // A code is accepted once: the next step's (within the ±1 window) is still unused.
    await page.getByLabel('Authenticator code').fill(totp.generate({ timestamp: Date.now() + 30_000 }));
    await page.getByRole('button', { name: 'Verify' }).click();
    // Signed in, with no scope that opens a screen: an empty nav and a sentence saying so.
    await page.getByText("Your scopes open none of the console's screens.").waitFor();
    expect(await page.getByRole('navigation', { name: 'main' }).getByRole('link').count()).toBe(0);
    expect((await page.context().cookies()).some((c) => c.name === 'svc_refresh' && c.httpOnly)).toBe(true);
    await page.close();
  });

  it('creates a subscription with a 3-node graph, marks a bad node, tests it, runs a real event and shows the run', {
    timeout: 120_000,
  }, async () => {
    const { page, errors } = await openPage();
    await signIn(page);
    await page.getByRole('link', { name: 'Subscriptions' }).click();
    await page.getByRole('link', { name: 'New subscription' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Orders doubled');
    await page.getByLabel('Event type').fill(EVENT_TYPE);
    await page.getByLabel(/^Keep failed runs/).fill('60');
    await page.getByLabel(/^Flow control/).fill('{"concurrency": {"limit": 5}}');
    await page.getByRole('button', { name: 'Create' }).click();
    await page.waitForURL(/\/console\/subscriptions\/(?!new$)[^/]+$/, { waitUntil: 'commit' });
    const subscriptionId = page.url().split('/').pop()!;
    // Retention in days on the form, seconds in the API; empty is the server's default.
    await expect.poll(() => page.getByLabel(/^Keep failed runs/).inputValue()).toBe('60');
    expect(await page.getByLabel(/^Keep completed/).inputValue()).toBe('');
    // Flow control as saved, read back from the API's answer.
    expect(JSON.parse(await page.getByLabel(/^Flow control/).inputValue())).toEqual({
      concurrency: { limit: 5 },
    });

    // A graph whose second node calls an unknown operator: the server's 400 marks that node.
    const graph = page.getByLabel(/^Graph JSON/);
    const broken = structuredClone(GRAPH);
    (broken.nodes[1] as { config: unknown }).config = { logic: { cat: [{ nope: [1] }] } };
    await graph.fill(JSON.stringify(broken, null, 2));
    await page.getByRole('button', { name: 'Save graph' }).click();
    // Any alert first, then its text: a different answer fails saying what it was.
    const alert = page.getByRole('alert').first();
    await alert.waitFor();
    expect(await alert.innerText()).toContain('WORKFLOW.INVALID_GRAPH');
    await page.locator('svg.graph g.node.invalid[data-node="label"]').waitFor();
    expect(await page.locator('svg.graph g.node.invalid').count()).toBe(1);

    // A template key one typo from an operator saves, and the warning is shown at its node.
    const doubtful = structuredClone(GRAPH);
    (doubtful.nodes[1] as { config: unknown }).config = { logic: { vr: 'event.data.name' } };
    await graph.fill(JSON.stringify(doubtful, null, 2));
    await page.getByRole('button', { name: 'Save graph' }).click();
    const warning = page.getByRole('status').filter({ hasText: 'did you mean the operator "var"?' });
    await warning.waitFor();
    expect(await warning.locator('li[data-node="label"]').count()).toBe(1);
    await page.locator('svg.graph g.node.warned[data-node="label"]').waitFor();

    await graph.fill(JSON.stringify(GRAPH, null, 2));
    await page.getByRole('button', { name: 'Save graph' }).click();
    await page.getByText('Saved', { exact: true }).waitFor();
    await expect.poll(() => page.locator('svg[aria-label="subscription graph"] g.node').count()).toBe(3);
    await expect.poll(() => page.locator('svg[aria-label="subscription graph"] g.edge').count()).toBe(2);
    await page.screenshot({ path: join(SHOTS, 'subscription.png'), fullPage: true });

    // Test: prefilled from the type's example (total 21): every node completes, outputs visible.
    await page.getByRole('button', { name: 'Run test' }).click();
    await page.getByRole('table', { name: 'test nodes' }).waitFor();
    await page.getByRole('button', { name: 'label', exact: true }).click();
    const output = page.getByLabel('node output', { exact: true });
    await expect.poll(() => output.innerText()).toContain('order:42');
    // The playground: a path offered by the node, evaluated on the server.
    await page.getByRole('button', { name: 'nodes.derive.output.doubled', exact: true }).click();
    await page.getByRole('button', { name: 'Evaluate' }).click();
    await expect.poll(() => page.getByLabel('expression result').innerText()).toBe('42');

    // A real event: the run appears in the list and completes in the run view.
    const eventBox = page.getByLabel(/^Event \(a CloudEvent/);
    const event = JSON.parse(await eventBox.inputValue());
    await eventBox.fill(JSON.stringify({ ...event, id: 'order-real-1', data: { total: 5 } }));
    await page.getByRole('button', { name: 'Publish as a real event' }).click();
    await page.getByRole('status').getByRole('link', { name: 'Runs of this subscription' }).click();
    const runLink = page.getByRole('table', { name: 'runs' }).getByRole('link').first();
    await runLink.waitFor({ timeout: 15_000 });
    expect(page.url()).toContain(`event_subscription_id=${subscriptionId}`);
    await page.screenshot({ path: join(SHOTS, 'runs.png'), fullPage: true });
    await runLink.click();
    await page.locator('h1 .status-completed').waitFor({ timeout: 15_000 });
    await expect
      .poll(() => page.locator('svg[aria-label="run graph"] g.node.status-completed').count())
      .toBe(3);
    await page.getByRole('button', { name: 'label', exact: true }).click();
    await expect.poll(() => page.getByLabel('node output').innerText()).toContain('order:10');
    await page.screenshot({ path: join(SHOTS, 'run.png'), fullPage: true });

    // Re-run from the run view: a new run of the same event, which completes too.
    const firstRun = page.url();
    await page.getByRole('button', { name: 'Re-run' }).click();
    await page.waitForURL((url) => url.href !== firstRun, { waitUntil: 'commit' });
    await page.locator('h1 .status-completed').waitFor({ timeout: 15_000 });
    expect(await page.getByText('re-run of').count()).toBe(1);
    // Nothing failed in the page and the Content-Security-Policy blocked nothing (no inline code, no
    // other origin). The one error the browser logs is the bad graph's 400, the API's answer.
    expect(errors.filter((e) => !/status of 400/.test(e))).toEqual([]);
    await page.close();
  });

  it('shows only what the scopes allow, and works at a narrow width in the dark theme', async () => {
    const role = await server.api('POST', '/role', { key: 'console_reader', name: 'Console reader' });
    expect(role.status).toBe(200);
    const scopes = await server.api('PUT', `/role/${role.body.id}/scope`, { scope_keys: ['workflow:read'] });
    expect(scopes.status).toBe(200);
    const user = await server.api('POST', '/user', {
      email: 'reader@example.test',
      password: 'reader-password-1',
    });
    expect(user.status).toBe(200);
    expect(
      (await server.api('POST', '/user_role', { user_id: user.body.id, role_id: role.body.id })).status,
    ).toBe(200);

    await completedRun('narrow', GRAPH);
    const { page } = await openPage(390, 800);
    await page.goto(`${server.base}/console/`);
    await page.getByLabel('Email').fill('reader@example.test');
    await page.getByLabel('Password').fill('reader-password-1');
    await page.getByRole('button', { name: 'Sign in' }).click();
    const nav = page.getByRole('navigation', { name: 'main' });
    await nav.waitFor();
    expect(await nav.getByRole('link').allInnerTexts()).toEqual(['Runs']);
    await page.waitForURL(/\/console\/runs$/, { waitUntil: 'commit' });
    // Keyboard: the skip link is the first stop and leads to the content.
    await page.reload();
    await nav.waitFor();
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement?.textContent')).toBe('Skip to content');
    await page.getByRole('button', { name: 'switch theme' }).click();
    await expect.poll(() => page.evaluate('document.documentElement.dataset.theme')).toBe('dark');
    const width = await page.evaluate('document.documentElement.scrollWidth');
    expect(width).toBeLessThanOrEqual(390);
    await page.screenshot({ path: join(SHOTS, 'runs-narrow-dark.png'), fullPage: true });
    // A run's view at this width: its columns stack, nothing wider than the screen but its tables' own scroll.
    await page.getByRole('table', { name: 'runs' }).getByRole('link').first().click();
    await page.getByRole('table', { name: 'run timeline' }).waitFor();
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    // No way in to what the scopes do not open: the subscription is not linked for this user.
    expect(await page.getByRole('link', { name: 'Subscription', exact: true }).count()).toBe(0);
    await page.screenshot({ path: join(SHOTS, 'run-narrow-dark.png'), fullPage: true });
    await page.close();
  });

  it('first load: the JS and CSS the browser fetched, compressed, fit in 300 KB (printed)', async () => {
    const { page } = await openPage();
    await page.goto(`${server.base}/console/`);
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    const sizes = (await page.evaluate(
      `performance.getEntriesByType('resource').map((e) => ({ name: e.name, bytes: e.encodedBodySize }))`,
    )) as Array<{ name: string; bytes: number }>;
    const assets = sizes.filter((s) => /\.(js|css)$/.test(new URL(s.name).pathname));
    const total = assets.reduce((sum, s) => sum + s.bytes, 0);
    console.log(
      `console first load: ${(total / 1024).toFixed(1)} KB of compressed JS and CSS in ${assets.length} files (budget 300 KB)`,
    );
    expect(assets.length).toBeGreaterThanOrEqual(2);
    expect(total).toBeGreaterThan(0);
    expect(total).toBeLessThanOrEqual(300 * 1024);
    await page.close();
  });

  it('renders the run view of a 50-node run (time printed, not asserted)', { timeout: 120_000 }, async () => {
    const nodes = Array.from({ length: 49 }, (_, i) => ({
      key: `step_${i}`,
      type: 'COMPUTE',
      config: { logic: { '+': [{ var: 'event.data.total' }, i] } },
    }));
    nodes.push({ key: 'end', type: 'END' } as never);
    const edges = nodes.slice(1).map((n, i) => ({ from_node_id: nodes[i].key, to_node_id: n.key }));
    const subscriptionId = await completedRun('fifty', { nodes, edges });

    const { page } = await openPage();
    await signIn(page);
    await page.goto(`${server.base}/console/runs?event_subscription_id=${subscriptionId}`);
    const link = page.getByRole('table', { name: 'runs' }).getByRole('link').first();
    await link.waitFor();
    const started = Date.now();
    await link.click();
    await page.locator('[data-node-row]').nth(49).waitFor();
    await page.locator('svg[aria-label="run graph"] g.node').nth(49).waitFor();
    const ms = Date.now() - started;
    console.log(
      `run view of a 50-node run: ${ms} ms from the click to 50 timeline rows and 50 graph nodes (goal 200 ms)`,
    );
    expect(await page.locator('[data-node-row]').count()).toBe(50);
    await page.screenshot({ path: join(SHOTS, 'run-50-nodes.png'), fullPage: true });
    await page.close();
  });

  it('creates a webhook (secret shown once), watches a delivery fail, and retries it to success', {
    timeout: 120_000,
  }, async () => {
    const { page, bodies } = await openPage();
    await signIn(page);
    await page.getByRole('link', { name: 'Webhooks' }).click();
    const form = page.getByRole('form', { name: 'new webhook' });
    await form.getByLabel('Name').fill('Orders out');
    await form.getByLabel('URL').fill(`${receiverUrl}/hook`);
    await form.getByLabel(/^Event types/).fill(EVENT_TYPE);
    await form.getByLabel(/^Keep finished deliveries/).fill('2');
    await form.getByLabel(/^Rate limit: calls/).fill('50');
    await form.getByLabel(/^per seconds/).fill('1');
    await form.getByRole('button', { name: 'Create webhook' }).click();
    const secret = page
      .getByRole('region', { name: 'Signing secret (Standard Webhooks form)' })
      .locator('code');
    await expect.poll(() => secret.innerText()).toMatch(/^whsec_/);
    expect(await page.getByText('Verify a delivery').count()).toBeGreaterThan(0);
    await page.getByRole('link', { name: 'Open Orders out' }).click();
    // The secret is not shown again: not on the webhook's page, not in its answer.
    const whsec = await page.evaluate('document.body.innerText.match(/whsec_\\S+/)');
    expect(whsec).toBeNull();
    // Its retention and rate limit, set at creation, changed here.
    const settings = page.getByRole('form', { name: 'settings' });
    const keep = settings.getByLabel(/^Keep finished deliveries/);
    const calls = settings.getByLabel(/^Rate limit: calls/);
    await expect.poll(() => keep.inputValue()).toBe('2');
    await expect.poll(() => calls.inputValue()).toBe('50');
    await keep.fill('0.5');
    await calls.fill('20');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await settings.getByText('Saved').waitFor();
    await page.reload();
    await expect.poll(() => keep.inputValue()).toBe('0.5');
    await expect.poll(() => calls.inputValue()).toBe('20');
    expect(await settings.getByLabel(/^per seconds/).inputValue()).toBe('1');

    await page.getByRole('button', { name: 'Send test event' }).click();
    const row = page.getByRole('table', { name: 'deliveries' }).locator('tr[data-delivery]').first();
    await row.locator('.status-failed').waitFor({ timeout: 30_000 });
    receiverHealthy = true;
    await row.getByRole('button', { name: 'Retry' }).click();
    await row.locator('.status-success').waitFor({ timeout: 30_000 });
    await row.getByRole('button', { name: EVENT_TYPE }).click();
    const attempts = page.getByRole('table', { name: 'attempts' });
    await attempts.waitFor();
    expect(await attempts.locator('.status-failed').count()).toBe(5);
    expect(await attempts.locator('.status-success').count()).toBe(1);
    expect(received.filter((r) => r === 'POST /hook')).toHaveLength(6);
    await page.screenshot({ path: join(SHOTS, 'webhook.png'), fullPage: true });
    // Rotating shows the new secret once.
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await expect
      .poll(() =>
        page
          .getByRole('region', { name: 'Signing secret (hex, for X-Signature)' })
          .locator('code')
          .innerText(),
      )
      .toMatch(/^[0-9a-f]{64}$/);
    expect(bodies.length).toBeGreaterThan(0);
    await page.close();
  });

  it('keeps a vault SECRET out of the DOM and out of every response the page received', async () => {
    const value = 'S3cr3t-console-value-91';
    const { page, bodies } = await openPage();
    await signIn(page);
    await page.getByRole('link', { name: 'Vault' }).click();
    const form = page.getByRole('form', { name: 'new vault entry' });
    await form.getByLabel('Key').fill('console_secret');
    await form.getByLabel('Value').fill(value);
    await form.getByRole('button', { name: 'Create entry' }).click();
    const row = page.getByRole('row', { name: /console_secret/ });
    await row.waitFor();
    expect(await row.innerText()).toContain('set (never shown)');
    await row.getByRole('button', { name: 'Replace value' }).click();
    await row.getByLabel('New value').fill(`${value}-2`);
    await row.getByRole('button', { name: 'Save' }).click();
    await row.getByRole('button', { name: 'Replace value' }).waitFor();
    await page.reload();
    await page.getByRole('row', { name: /console_secret/ }).waitFor();
    const inputs = (await page.evaluate(
      `[...document.querySelectorAll('input, textarea')].map((e) => e.value).join('\\n')`,
    )) as string;
    expect(await page.content()).not.toContain(value);
    expect(inputs).not.toContain(value);
    expect(bodies.join('\n')).not.toContain(value);
    expect(bodies.join('\n')).toContain('******');
    await page.close();
  });

  it('creates an API key with scopes picked from the user’s own (token once), and revokes it', async () => {
    const { page } = await openPage();
    await signIn(page);
    await page.getByRole('link', { name: 'API keys' }).click();
    const form = page.getByRole('form', { name: 'new api key' });
    await form.getByLabel('Name').fill('console-ci');
    await form.getByLabel('workflow:read', { exact: true }).check();
    await form.getByRole('button', { name: 'Create key' }).click();
    const token = await page.getByRole('region', { name: 'API key token' }).locator('code').innerText();
    expect(token).toMatch(/^svc_key_[0-9A-Za-z]{43}$/);
    const runs = await fetch(`${server.base}/api/v1/workflow_run`, { headers: { 'x-api-key': token } });
    expect(runs.status).toBe(200);
    const row = page.getByRole('row', { name: /console-ci/ });
    expect(await row.innerText()).toContain('workflow:read');
    await row.getByRole('button', { name: 'Revoke' }).click();
    await expect.poll(() => row.innerText()).toContain('revoked');
    expect(
      (await fetch(`${server.base}/api/v1/workflow_run`, { headers: { 'x-api-key': token } })).status,
    ).toBe(401);
    await page.close();
  });

  it('makes a plugin instance from a form generated by its config schema and invokes an action', async () => {
    const { page } = await openPage();
    await signIn(page);
    await page.getByRole('link', { name: 'Plugins' }).click();
    await page
      .getByRole('table', { name: 'plugin definitions' })
      .getByRole('link', { name: 'http', exact: true })
      .click();
    await page.getByLabel('Display name').fill('Receiver');
    const config = page.getByRole('form', { name: 'instance config' });
    await config.getByLabel(/^base_url/).fill(receiverUrl);
    await config.getByRole('button', { name: 'Create instance' }).click();
    await page.getByRole('heading', { name: 'Receiver' }).waitFor();
    const invoke = page.getByRole('form', { name: 'invoke payload' });
    await invoke.getByLabel(/^method/).selectOption('GET');
    await invoke.getByLabel(/^url/).fill('/ping');
    await invoke.getByRole('button', { name: 'Invoke' }).click();
    await expect.poll(() => page.getByLabel('invoke output').innerText()).toContain('200');
    expect(received).toContain('GET /ping');
    await page.screenshot({ path: join(SHOTS, 'plugin.png'), fullPage: true });
    await page.close();
  });

  it("sets a plugin instance's limits and a subscription's flow control; says why a run is pending and an ACTION waits", {
    timeout: 90_000,
  }, async () => {
    const defs = await server.api('GET', '/plugin_definition?name=http');
    const instance = await server.api('POST', '/plugin_instance', {
      plugin_definition_id: defs.body.plugin_definitions[0].id,
      display_name: 'Limited receiver',
      enabled: true,
      config_json: { base_url: receiverUrl },
    });
    expect(instance.status).toBe(200);
    const sub = await server.api('POST', '/event_subscription', { name: 'limited', event_type: EVENT_TYPE });
    const graph = {
      nodes: [
        {
          key: 'ping',
          type: 'ACTION',
          config: {
            plugin_instance_id: instance.body.id,
            plugin_action: 'request',
            input_mapping: { method: 'GET', url: '/ping' },
          },
        },
      ],
      edges: [],
    };
    expect((await server.api('PUT', `/event_subscription/${sub.body.id}/graph`, graph)).status).toBe(200);

    const { page } = await openPage();
    await signIn(page);
    // One call an hour, typed as calls per seconds.
    await page.goto(`${server.base}/console/plugins/instances/${instance.body.id}`);
    const limits = page.getByRole('form', { name: 'limits' });
    await limits.getByLabel(/^Rate limit: calls/).fill('1');
    await limits.getByLabel(/^per seconds/).fill('3600');
    await limits.getByRole('button', { name: 'Save limits' }).click();
    await limits.getByText('Saved').waitFor();
    expect((await server.api('GET', `/plugin_instance/${instance.body.id}`)).body).toMatchObject({
      rate_limit: { limit: 1, period_ms: 3_600_000 },
      max_concurrency: null,
    });
    // Half a limit is refused before it is sent.
    await limits.getByLabel(/^per seconds/).fill('');
    await limits.getByRole('button', { name: 'Save limits' }).click();
    await expect.poll(() => page.getByRole('alert').innerText()).toContain('needs both');
    await page.goto(`${server.base}/console/plugins`);
    const row = page
      .getByRole('table', { name: 'plugin instances' })
      .locator('tr', { hasText: 'Limited receiver' });
    await expect.poll(() => row.innerText()).toContain('1 calls per 3600 s');

    // One run of the subscription at a time, set in its form.
    await page.goto(`${server.base}/console/subscriptions/${sub.body.id}`);
    const form = page.getByRole('form', { name: 'subscription' });
    await form.getByLabel(/^Flow control/).fill('{"concurrency": {"limit": 1}}');
    await form.getByRole('button', { name: 'Save' }).click();
    await form.getByText('Saved').waitFor();
    expect((await server.api('GET', `/event_subscription/${sub.body.id}`)).body.flow_control).toMatchObject({
      concurrency: { limit: 1 },
    });

    // The first run makes the hour's call; the second waits for the limit; the third for the second.
    for (const id of ['limited-1', 'limited-2', 'limited-3']) {
      const event = { specversion: '1.0', id, source: '/shop', type: EVENT_TYPE, data: { total: 3 } };
      expect((await server.api('POST', '/event', event)).status).toBe(202);
    }
    const runsOf = async (status: string) =>
      (await server.api('GET', `/workflow_run?event_subscription_id=${sub.body.id}&status=${status}`)).body
        .runs;
    await expect.poll(async () => (await runsOf('completed')).length, { timeout: 30_000 }).toBe(1);
    await expect.poll(async () => (await runsOf('pending')).length, { timeout: 30_000 }).toBe(1);
    const [waiting] = await runsOf('running');
    await page.goto(`${server.base}/console/runs?event_subscription_id=${sub.body.id}`);
    const runs = page.getByRole('table', { name: 'runs' });
    await expect.poll(() => runs.locator('.status-pending').count()).toBe(1);
    await expect.poll(() => runs.innerText()).toContain('waiting: concurrency');
    await page.goto(`${server.base}/console/runs/${waiting.id}`);
    await expect
      .poll(() => page.locator('[data-node-note="ping"]').first().innerText(), { timeout: 30_000 })
      .toContain("waits for its plugin instance's rate limit");
    await page.screenshot({ path: join(SHOTS, 'limits.png'), fullPage: true });
    await page.close();
    const cancelled = await server.api('POST', '/workflow_run/cancel', {
      event_subscription_id: sub.body.id,
    });
    expect(cancelled.body.cancelled).toHaveLength(2);
  });

  it('lists event types with their schema and examples, and the outbox tasks', async () => {
    const { page } = await openPage();
    await signIn(page);
    await page.getByRole('link', { name: 'Event types' }).click();
    await page.getByRole('link', { name: EVENT_TYPE }).click();
    await expect.poll(() => page.getByLabel('data schema', { exact: true }).innerText()).toContain('"total"');
    expect(await page.getByLabel('example 1', { exact: true }).innerText()).toContain('order-1');
    await page.getByRole('link', { name: 'Outbox' }).click();
    const table = page.getByRole('table', { name: 'outbox tasks' });
    await table.locator('.status-done').first().waitFor();
    await page.close();
  });

  it('creates, disables and deletes a schedule', async () => {
    const { page } = await openPage();
    await signIn(page);
    // The list arrives after the form was filled in: what was typed stays (see holdList).
    const releaseList = await holdList(page, '/api/v1/schedule');
    await page.getByRole('link', { name: 'Schedules' }).click();
    const form = page.getByRole('form', { name: 'new schedule' });
    await form.getByLabel('Name').fill('New year');
    await form.getByLabel(/^Cron/).fill('0 0 1 1 *');
    await form.getByLabel(/^Time zone/).fill('Europe/Berlin');
    await form.getByLabel(/^Event type/).fill(EVENT_TYPE);
    await form.getByLabel('Event data (JSON)').fill('{"total": 1}');
    await releaseList();
    // The pager is drawn once the list has arrived: the screen has re-rendered over the typed form.
    await page.getByRole('button', { name: 'Previous' }).waitFor();
    await form.getByRole('button', { name: 'Create schedule' }).click();
    const row = page.getByRole('row', { name: /New year/ });
    await row.waitFor();
    expect(await row.innerText()).toContain('Europe/Berlin');
    expect(await row.innerText()).toMatch(/\d{1,2}\/\d{1,2}\/20\d\d/); // the next fire times, in the browser's locale
    await row.getByRole('button', { name: 'Disable' }).click();
    await expect.poll(() => row.innerText()).toContain('disabled');
    await row.getByRole('button', { name: 'Delete' }).click();
    await expect.poll(() => page.getByRole('row', { name: /New year/ }).count()).toBe(0);
    await page.close();
  });

  it("replays the last hour's events to a subscription made after them", { timeout: 60_000 }, async () => {
    await completedRun('before-replay', GRAPH);
    const later = await server.api('POST', '/event_subscription', {
      name: 'made later',
      event_type: EVENT_TYPE,
    });
    expect((await server.api('PUT', `/event_subscription/${later.body.id}/graph`, GRAPH)).status).toBe(200);
    const { page } = await openPage();
    await signIn(page);
    await page.goto(`${server.base}/console/subscriptions/${later.body.id}`);
    const replay = page.getByRole('form', { name: 'replay' });
    await replay.getByRole('button', { name: 'Replay' }).click();
    const status = page.getByRole('status').filter({ hasText: 'new run' });
    await expect.poll(() => status.innerText()).toMatch(/^[1-9]\d* new runs?/);
    await status.getByRole('link', { name: 'Runs of this subscription' }).click();
    await page
      .getByRole('table', { name: 'runs' })
      .locator('.status-completed')
      .first()
      .waitFor({ timeout: 15_000 });
    await page.close();
  });

  it('registers a custom event type with its schema and an example', async () => {
    const { page } = await openPage();
    await signIn(page);
    await page.getByRole('link', { name: 'Event types' }).click();
    const form = page.getByRole('form', { name: 'new event type' });
    await form.getByLabel(/^Type/).fill('com.example.console.refund');
    await form.getByLabel('Description').fill('A refund');
    await form
      .getByLabel(/^Data schema/)
      .fill('{"type":"object","required":["amount"],"properties":{"amount":{"type":"number"}}}');
    await form
      .getByLabel(/^Examples/)
      .fill(
        '[{"specversion":"1.0","id":"refund-1","source":"/shop","type":"com.example.console.refund","data":{"amount":3}}]',
      );
    await form.getByRole('button', { name: 'Register type' }).click();
    await page.getByRole('heading', { name: 'com.example.console.refund' }).waitFor();
    expect(await page.getByLabel('data schema', { exact: true }).innerText()).toContain('"amount"');
    expect(await page.getByLabel('example 1', { exact: true }).innerText()).toContain('refund-1');
    // An example that does not match the schema is refused with the API's 400, shown on the form;
    // the list arriving after the form was filled in leaves what was typed alone.
    const releaseList = await holdList(page, '/api/v1/event_definition');
    await page.getByRole('navigation', { name: 'main' }).getByRole('link', { name: 'Event types' }).click();
    await form.getByLabel(/^Type/).fill('com.example.console.bad');
    await form.getByLabel(/^Data schema/).fill('{"type":"object","required":["amount"]}');
    await form
      .getByLabel(/^Examples/)
      .fill('[{"specversion":"1.0","id":"x","source":"/s","type":"com.example.console.bad","data":{}}]');
    await releaseList();
    await page.getByRole('table', { name: 'event types' }).getByRole('link', { name: EVENT_TYPE }).waitFor();
    await form.getByRole('button', { name: 'Register type' }).click();
    await expect.poll(() => form.getByRole('alert').innerText()).toContain('examples.0.data');
    await page.close();
  });

  it('cancels every pending and running run of a subscription at once', { timeout: 60_000 }, async () => {
    const sub = await server.api('POST', '/event_subscription', { name: 'waits', event_type: EVENT_TYPE });
    const graph = {
      nodes: [
        { key: 'wait', type: 'DELAY', config: { delay_ms: 600_000 } },
        { key: 'end', type: 'END' },
      ],
      edges: [{ from_node_id: 'wait', to_node_id: 'end' }],
    };
    expect((await server.api('PUT', `/event_subscription/${sub.body.id}/graph`, graph)).status).toBe(200);
    for (const id of ['wait-1', 'wait-2']) {
      const event = { specversion: '1.0', id, source: '/shop', type: EVENT_TYPE, data: { total: 2 } };
      expect((await server.api('POST', '/event', event)).status).toBe(202);
    }
    await expect
      .poll(
        async () =>
          (await server.api('GET', `/workflow_run?event_subscription_id=${sub.body.id}&status=running`)).body
            .total,
        { timeout: 30_000 },
      )
      .toBe(2);
    const { page } = await openPage();
    await signIn(page);
    await page.goto(`${server.base}/console/runs?event_subscription_id=${sub.body.id}`);
    await page
      .getByRole('button', { name: 'Cancel every pending and running run of this subscription' })
      .click();
    await expect.poll(() => page.getByRole('status').innerText()).toBe('2 runs cancelled');
    await expect
      .poll(() => page.getByRole('table', { name: 'runs' }).locator('.status-cancelled').count())
      .toBe(2);
    await page.close();
  });
  it('draws failure edges, says what a WAIT_EVENT waits for and a FOREACH did, and links a CALL to its child and back', {
    timeout: 90_000,
  }, async () => {
    const paid = 'com.example.console.paid';
    expect((await server.api('POST', '/event_definition', { event_type: paid })).status).toBe(200);
    const child = await server.api('POST', '/event_subscription', { name: 'child', event_type: paid });
    const childGraph = {
      nodes: [{ key: 'note', type: 'COMPUTE', config: { logic: { noted: true } } }],
      edges: [],
    };
    expect((await server.api('PUT', `/event_subscription/${child.body.id}/graph`, childGraph)).status).toBe(
      200,
    );
    const sub = await server.api('POST', '/event_subscription', { name: 'shapes', event_type: EVENT_TYPE });
    const graph = {
      nodes: [
        {
          key: 'lines',
          type: 'FOREACH',
          config: { items: [1, 2, 3], call: { subscription_id: child.body.id, input: {} } },
        },
        { key: 'rescue', type: 'COMPUTE', config: { logic: { rescued: true } } },
        { key: 'page', type: 'CALL', config: { subscription_id: child.body.id, input: {} } },
        {
          key: 'wait',
          type: 'WAIT_EVENT',
          config: {
            event_type: paid,
            correlation: { run: { var: 'event.id' }, event: { var: 'event.data.order' } },
            timeout_ms: 600_000,
          },
        },
      ],
      edges: [
        { from_node_id: 'lines', to_node_id: 'rescue', on_failure: true },
        { from_node_id: 'lines', to_node_id: 'page' },
      ],
    };
    const put = await server.api('PUT', `/event_subscription/${sub.body.id}/graph`, graph);
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    const failureEdge = put.body.edges.find((e: { on_failure: boolean }) => e.on_failure).id;
    const event = {
      specversion: '1.0',
      id: 'shapes-1',
      source: '/shop',
      type: EVENT_TYPE,
      data: { total: 3 },
    };
    expect((await server.api('POST', '/event', event)).status).toBe(202);
    let runId = '';
    await expect
      .poll(
        async () => {
          const run = (await server.api('GET', `/workflow_run?event_subscription_id=${sub.body.id}`)).body
            .runs[0];
          if (!run) return 'no run';
          runId = run.id;
          const nodes = (await server.api('GET', `/workflow_run/${run.id}/node`)).body.nodes;
          return nodes.find((n: { node_key: string }) => n.node_key === 'page')?.status;
        },
        { timeout: 30_000 },
      )
      .toBe('completed');
    const { page, errors } = await openPage();
    await signIn(page);
    await page.goto(`${server.base}/console/runs/${runId}`);
    const graphView = page.getByRole('img', { name: 'run graph' });
    await graphView.waitFor();
    expect(await graphView.locator(`[data-edge="${failureEdge}"]`).getAttribute('class')).toBe(
      'edge failure',
    );
    expect(await graphView.locator(`[data-edge="${failureEdge}"]`).innerHTML()).toContain('on failure');
    await expect
      .poll(() => page.locator('[data-node-note="lines"]').first().innerText())
      .toContain('3 / 3 items');
    await expect
      .poll(() => page.locator('[data-node-note="wait"]').first().innerText())
      .toMatch(new RegExp(`waits for ${paid.replaceAll('.', '\\.')} with key "shapes-1" until \\d{4}-`));
    const childLink = page.locator('[data-node-note="page"] a').first();
    const childId = await childLink.getAttribute('data-child-run');
    await expect.poll(() => page.getByRole('table', { name: 'child runs' }).locator('tr').count()).toBe(5);
    await page.screenshot({ path: join(SHOTS, 'run-children.png'), fullPage: true });
    await childLink.click();
    await page.waitForURL(`**/console/runs/${childId}`);
    await page.locator(`[data-parent-run="${runId}"]`).click();
    await page.waitForURL(`**/console/runs/${runId}`);
    await page.goto(`${server.base}/console/runs?parent_run_id=${runId}`);
    await expect.poll(() => page.getByRole('table', { name: 'runs' }).locator('tbody tr').count()).toBe(4);
    expect(await page.locator(`[data-parent-filter="${runId}"]`).count()).toBe(1);
    expect(errors).toEqual([]);
    await page.close();
  });
});
