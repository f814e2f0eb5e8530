import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnCli, waitForOutput } from './helpers/cli.js';

const SCRIPT = fileURLToPath(new URL('../examples/quickstart.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'svc-example-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The README's walk past sign-in is examples/quickstart.mjs: it runs, unchanged, against `svc serve`. */
describe('examples/quickstart.mjs', () => {
  it('signs in, makes an API key, a two-node subscription and a webhook, and sees the run and the delivery', async () => {
    const server = spawnCli(['serve'], {
      SVC_DATABASE_URL: `sqlite:${dir}/svc.db`,
      SVC_DATA_DIR: dir,
      PORT: '0',
      SVC_ALLOW_PRIVATE_NETWORKS: 'true',
      SVC_BOOTSTRAP_ADMIN_EMAIL: 'admin@example.com',
      SVC_BOOTSTRAP_ADMIN_PASSWORD: 'a long password',
    });
    try {
      const line = await waitForOutput(server, /listening on/);
      const address = /listening on (http:\/\/[^ ]+)/.exec(line)![1];
      const child = spawn(process.execPath, [SCRIPT], {
        env: {
          PATH: process.env.PATH,
          SVC_URL: address,
          SVC_EMAIL: 'admin@example.com',
          SVC_PASSWORD: 'a long password',
        },
        stdio: 'pipe',
      });
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (out += d));
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      expect(out).toMatch(/run [0-9a-f-]+ completed/);
      expect(out).toContain('svc.folder.created for folder');
      expect(out).toContain('delivery verified');
      expect(out).toContain('the http action posted: {"text":"New folder: Quickstart"');
      expect(code).toBe(0);
    } finally {
      server.kill('SIGTERM');
      await new Promise((r) => server.on('exit', r));
    }
  });
});
