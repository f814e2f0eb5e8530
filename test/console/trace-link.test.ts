import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasBrowser, launchBrowser } from '../helpers/browser.js';
import { ADMIN, type ConsoleServer, startConsoleServer } from '../helpers/console.js';
import { OtlpReceiver } from '../helpers/otlp-receiver.js';

/**
 * The run view names the run's trace and, with SVC_TRACE_URL_TEMPLATE, links to it
 * (docs/observability.md "Finding a run's trace"), in a real browser against `svc serve` exporting
 * to a receiver of the test's.
 */
describe.skipIf(!hasBrowser)('the console links a run to its trace', () => {
  let otlp: OtlpReceiver;
  let server: ConsoleServer;
  let browser: Browser;

  beforeAll(async () => {
    otlp = await new OtlpReceiver().start();
    server = await startConsoleServer(
      otlp.env({ SVC_TRACE_URL_TEMPLATE: 'https://tracing.example/trace/{trace_id}?from=svc' }),
    );
    browser = await launchBrowser();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await otlp?.close();
  });

  it('shows the trace id as a link built from the template', async () => {
    const sub = await server.api('POST', '/event_subscription', {
      name: 'Traced',
      event_type: 'svc.user.created',
    });
    expect(sub.status).toBe(200);
    const graph = await server.api('PUT', `/event_subscription/${sub.body.id}/graph`, {
      nodes: [{ key: 'n', type: 'COMPUTE', config: { logic: { var: 'event.data.email' } } }],
      edges: [],
    });
    expect(graph.status).toBe(200);
    expect(
      (await server.api('POST', '/user', { email: 'traced@example.test', password: 'traced-pass-1' })).status,
    ).toBe(200);
    let run: { id: string; status: string; trace_id: string; trace_url: string } | undefined;
    for (let i = 0; i < 200 && run?.status !== 'completed'; i++) {
      run = (await server.api('GET', `/workflow_run?event_subscription_id=${sub.body.id}`)).body.runs[0];
      if (run?.status !== 'completed') await new Promise((r) => setTimeout(r, 50));
    }
    expect(run?.status).toBe('completed');
    const traceId = run?.trace_id as string;
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(run?.trace_url).toBe(`https://tracing.example/trace/${traceId}?from=svc`);
    // The same trace the spans went to.
    await otlp.named('workflow.run', (s) => s.traceId === traceId);

    const page = await browser.newPage();
    try {
      await page.goto(`${server.base}/console/`);
      await page.getByLabel('Email').fill(ADMIN.email);
      await page.getByLabel('Password').fill(ADMIN.password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('navigation', { name: 'main' }).waitFor();
      await page.goto(`${server.base}/console/runs/${run?.id}`);
      const link = page.getByRole('link', { name: traceId });
      await link.waitFor();
      expect(await link.getAttribute('href')).toBe(run?.trace_url);
      expect(await link.getAttribute('rel')).toBe('noopener noreferrer');
    } finally {
      await page.close();
    }
  });
});
