import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnCli, waitForOutput } from './helpers/cli.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const dir = mkdtempSync(join(tmpdir(), 'svc-readme-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The `sh` blocks of one README section, in order. */
function shBlocks(heading: string): string[] {
  const start = README.indexOf(`\n## ${heading}`);
  if (start < 0) throw new Error(`README has no "## ${heading}"`);
  const end = README.indexOf('\n## ', start + 1);
  const section = README.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);
}

/** A port nobody listens on now. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * README "Your first hour", run as written: its first block's settings start a real `svc serve`,
 * and its second block runs in bash with curl and jq. Only the two ports are moved (8080 and 9000
 * may be taken where the suite runs); every other character of the block is the README's.
 */
describe('README "Your first hour"', () => {
  it('runs as written: a sign-in, a subscription, its run and the webhook delivery', async () => {
    const [start, calls] = shBlocks('Your first hour: from sign-in to a run and a delivery');
    expect(start.trim().endsWith('npm start')).toBe(true);
    const settings = Object.fromEntries(
      [...start.matchAll(/(SVC_[A-Z_]+)=('([^']*)'|\S+)/g)].map((m) => [m[1], m[3] ?? m[2]]),
    );
    expect(settings).toMatchObject({ SVC_BOOTSTRAP_ADMIN_EMAIL: 'admin@example.com' });
    for (const literal of ['127.0.0.1:8080', 'receiver.mjs 9000', '127.0.0.1:9000'])
      expect(calls).toContain(literal);

    const [apiPort, receiverPort] = [await freePort(), await freePort()];
    const server = spawnCli(['serve'], {
      ...settings,
      SVC_DATABASE_URL: `sqlite:${dir}/svc.db`,
      SVC_DATA_DIR: dir,
      PORT: String(apiPort),
    });
    let out = '';
    let shell: ReturnType<typeof spawn> | undefined;
    try {
      await waitForOutput(server, /listening on/);
      const script = calls
        .replaceAll('127.0.0.1:8080', `127.0.0.1:${apiPort}`)
        .replaceAll('receiver.mjs 9000', `receiver.mjs ${receiverPort}`)
        .replaceAll('127.0.0.1:9000', `127.0.0.1:${receiverPort}`);
      // Its own process group, so the receiver the block starts in the background ends with it.
      const child = spawn('bash', ['-e', '-o', 'pipefail', '-c', script], {
        cwd: ROOT,
        env: { PATH: process.env.PATH, HOME: process.env.HOME },
        stdio: 'pipe',
        detached: true,
      });
      shell = child;
      child.stdout?.on('data', (d) => (out += d));
      child.stderr?.on('data', (d) => (out += d));
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      expect(code, out).toBe(0);

      // What the block printed: the graph's two nodes, the folder, the run's nodes, the delivery.
      expect(out).toContain('"key": "message"');
      expect(out).toContain('"node_key": "announce"');
      expect(out).toContain('"event_type": "svc.folder.created"');

      // And what happened, read through the API as the administrator.
      const api = `http://127.0.0.1:${apiPort}/api/v1`;
      const login = await fetch(`${api}/auth/login/credentials`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          email: settings.SVC_BOOTSTRAP_ADMIN_EMAIL,
          password: settings.SVC_BOOTSTRAP_ADMIN_PASSWORD,
        }),
      });
      const { access_token } = (await login.json()) as { access_token: string };
      const auth = { authorization: `Bearer ${access_token}` };
      // biome-ignore lint/suspicious/noExplicitAny: the API's JSON, read as a test reads it.
      const get = async (path: string): Promise<any> =>
        (await fetch(`${api}${path}`, { headers: auth })).json();
      const run = await until('the run', async () => {
        const { runs } = await get('/workflow_run?status=completed');
        return runs[0];
      });
      const { nodes } = await get(`/workflow_run/${run.id}/node`);
      expect(nodes.map((n: { status: string }) => n.status)).toEqual(['completed', 'completed']);
      expect(nodes[0].output).toEqual({ text: 'New folder: Quickstart' });
      const { webhooks } = await get('/webhook');
      const delivery = await until('the delivery', async () => {
        const { deliveries } = await get(`/webhook/${webhooks[0].id}/delivery`);
        return deliveries.find((d: { status: string }) => d.status === 'SUCCESS');
      });
      expect(delivery.event_type).toBe('svc.folder.created');
      // The receiver printed the http action's POST and the signed webhook delivery.
      await until('the receiver', async () => (/POST \/webhook \(webhook-id /.test(out) ? true : undefined));
      expect(out).toContain('POST /announce');
      expect(out).toContain('{"text":"New folder: Quickstart"}');
    } finally {
      if (shell?.pid) {
        try {
          process.kill(-shell.pid, 'SIGTERM');
        } catch {
          // Gone already.
        }
      }
      server.kill('SIGTERM');
      await new Promise((r) => server.on('exit', r));
    }
  }, 90_000);
});
