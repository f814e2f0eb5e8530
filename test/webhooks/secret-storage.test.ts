import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { deriveFernetKey, Fernet } from '../../src/areas/vault/fernet.js';
import { cliCommands } from '../../src/cli/commands.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin } from '../helpers/auth.js';
import { TEST_SECRETS } from '../helpers/secrets.js';
import { dialectName, freshDatabase, onPostgres, type TestDatabase } from '../helpers/store.js';
import { cloudEvent, dispatch, type Receiver, receiver } from './helpers.js';

const K1 = TEST_SECRETS.SVC_VAULT_ENCRYPTION_KEY;
const K2 = 'the-next-vault-key';
const fernetOf = (passphrase: string) => new Fernet(deriveFernetKey(passphrase));

/**
 * Webhook signing secrets are stored sealed under the vault key (they must stay recoverable to sign):
 * never byte for byte in the store, re-encrypted by `svc vault rotate-key`, and plaintext ones left by
 * an earlier version are sealed at start-up.
 */
describe(`webhook signing secrets at rest (${dialectName})`, () => {
  let dir: string;
  let database: TestDatabase;
  let rx: Receiver;
  const apps: TestApp[] = [];
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-whsec-'));
    database = onPostgres ? await freshDatabase() : { url: `sqlite:${dir}/svc.db`, drop: async () => {} };
    rx = await receiver();
  });
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
    await rx.close();
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  });
  const open = async (env: Record<string, string> = {}) => {
    const app = await startTestApp({
      databaseUrl: database.url,
      env: { SVC_DATA_DIR: dir, SVC_ALLOW_PRIVATE_NETWORKS: 'true', ...env },
    });
    apps.push(app);
    return app;
  };
  const stored = async (t: TestApp, id: string) =>
    (
      await t.ctx.store.db
        .selectFrom('webhook')
        .select('secret')
        .where('id', '=', id)
        .executeTakeFirstOrThrow()
    ).secret;
  /** Sends one event to the webhook and checks its signature with `whsec`. */
  const deliversSignedWith = async (t: TestApp, whsec: string) => {
    const before = rx.received.length;
    await dispatch(t, cloudEvent());
    await t.ctx.services.webhookEngine.deliverDue();
    const got = rx.received[before];
    expect(got).toBeDefined();
    expect(new StandardWebhook(whsec).verify(got.body, got.headers as never)).toBeTruthy();
  };

  it('is sealed in the store, still signs, and rotate-key re-encrypts it', async () => {
    const a = await open();
    const who = await admin(a);
    const res = await a.app.inject({
      method: 'POST',
      url: '/api/v1/webhook',
      headers: who.headers,
      payload: { name: 'sealed', url: rx.url, event_types: ['*'] },
    });
    const hook = res.json();
    const token = await stored(a, hook.id);
    expect(token).not.toContain(hook.secret);
    expect(token).toMatch(/^gAAAAA/);
    expect(fernetOf(K1).decrypt(token).toString()).toBe(hook.secret);
    await deliversSignedWith(a, hook.standard_webhooks_secret);

    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    try {
      const rotate = cliCommands.find((c) => c.name === 'vault rotate-key')!;
      await rotate.run(a.ctx, { 'new-key': K2 });
      expect(log).toHaveBeenCalledWith(expect.stringContaining('1 webhook signing secret(s)'));
    } finally {
      log.mockRestore();
    }
    expect(
      fernetOf(K2)
        .decrypt(await stored(a, hook.id))
        .toString(),
    ).toBe(hook.secret);
    // A process that knows only the new key signs with the same secret.
    const b = await open({ SVC_VAULT_ENCRYPTION_KEY: K2 });
    await deliversSignedWith(b, hook.standard_webhooks_secret);
  });

  it('a plaintext secret left by an earlier version signs, and is sealed at the next start-up', async () => {
    const a = await open();
    const who = await admin(a);
    const hook = (
      await a.app.inject({
        method: 'POST',
        url: '/api/v1/webhook',
        headers: who.headers,
        payload: { name: 'legacy', url: rx.url, event_types: ['*'] },
      })
    ).json();
    // What an earlier version stored: the 64-hex key itself.
    await a.ctx.store.db
      .updateTable('webhook')
      .set({ secret: hook.secret })
      .where('id', '=', hook.id)
      .execute();
    await deliversSignedWith(a, hook.standard_webhooks_secret);
    const b = await open();
    const token = await stored(b, hook.id);
    expect(token).not.toBe(hook.secret);
    expect(fernetOf(K1).decrypt(token).toString()).toBe(hook.secret);
    await deliversSignedWith(b, hook.standard_webhooks_secret);
  });
});
