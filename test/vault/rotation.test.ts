import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { deriveFernetKey, Fernet } from '../../src/areas/vault/fernet.js';
import { cliCommands } from '../../src/cli/commands.js';
import { ConfigError, loadConfig } from '../../src/config/config.js';
import { type Clock, manualClock } from '../../src/lib/clock.js';
import { account, bearer, call, codeAt, expectError, expectTokens, login } from '../auth/helpers.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { principal } from '../helpers/auth.js';
import { runCli } from '../helpers/cli.js';
import { TEST_SECRETS } from '../helpers/secrets.js';
import { dialectName, freshDatabase, onPostgres, type TestDatabase } from '../helpers/store.js';
import { rawEntry, vaultClient } from './helpers.js';

const K1 = TEST_SECRETS.SVC_VAULT_ENCRYPTION_KEY;
const K2 = 'the-next-vault-key';
const fernetOf = (passphrase: string) => new Fernet(deriveFernetKey(passphrase));
const rotateKey = () => {
  const command = cliCommands.find((c) => c.name === 'vault rotate-key');
  if (!command) throw new Error('svc vault rotate-key is not registered');
  return command;
};

/**
 * Several apps (processes, in effect) over one database, each with its own vault keys: a SQLite file
 * or a fresh PostgreSQL database that outlives each app.
 */
describe(`vault key rotation (${dialectName})`, () => {
  let dir: string;
  let database: TestDatabase;
  const apps: TestApp[] = [];

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-vault-'));
    database = onPostgres ? await freshDatabase() : { url: `sqlite:${dir}/svc.db`, drop: async () => {} };
  });
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  const open = async (env: Record<string, string> = {}, clock?: Clock) => {
    const app = await startTestApp({ databaseUrl: database.url, env: { SVC_DATA_DIR: dir, ...env }, clock });
    apps.push(app);
    return app;
  };

  async function seed(t: TestApp) {
    const vault = vaultClient(t, (await principal(t, ['vault:read', 'vault:write', 'vault:delete'])).headers);
    const ids: Record<string, string> = {};
    for (const body of [
      { key: 'db_password', kind: 'SECRET', value: 'pw-one' },
      { key: 'api_token', kind: 'SECRET', value: 'tok-two', enabled: false },
      { key: 'gone_secret', kind: 'SECRET', value: 'deleted-three' },
      { key: 'plain_var', kind: 'VAR', value: 'var-four' },
    ]) {
      ids[body.key] = (await vault.create(body)).json().id;
    }
    expect((await vault.remove(ids.gone_secret)).status).toBe(200);
    return ids;
  }

  it('re-encrypts every SECRET (deleted ones too) under the new key in one go; VARs are untouched', async () => {
    const a = await open();
    const ids = await seed(a);
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    try {
      await rotateKey().run(a.ctx, { 'new-key': K2 });
      expect(log).toHaveBeenCalledWith(
        expect.stringMatching(/^re-encrypted 3 secret\(s\) under the new key/),
      );
    } finally {
      log.mockRestore();
    }
    const expected = { db_password: 'pw-one', api_token: 'tok-two', gone_secret: 'deleted-three' };
    for (const [key, plain] of Object.entries(expected)) {
      const token = (await rawEntry(a, ids[key])).value;
      expect(fernetOf(K2).decrypt(token).toString()).toBe(plain);
      expect(() => fernetOf(K1).decrypt(token)).toThrow();
    }
    expect((await rawEntry(a, ids.plain_var)).value).toBe('var-four');
    // The process that rotated now reads and writes under the new key.
    expect(await a.ctx.services.vault.resolveReferences('$secret:db_password')).toBe('pw-one');
    await a.ctx.services.vault.update('test', ids.db_password, { value: 'pw-one-b' });
    expect(
      fernetOf(K2)
        .decrypt((await rawEntry(a, ids.db_password)).value)
        .toString(),
    ).toBe('pw-one-b');
  });

  it('a process on the new key reads rotated secrets; one on the old key alone cannot', async () => {
    const a = await open();
    await seed(a);
    await a.ctx.services.vault.rotateKey(K2);
    const onNew = await open({ SVC_VAULT_ENCRYPTION_KEY: K2 });
    expect(await onNew.ctx.services.vault.resolveReferences({ p: '$secret:db_password' })).toEqual({
      p: 'pw-one',
    });
    const onOld = await open({ SVC_VAULT_ENCRYPTION_KEY: K1 });
    await expect(onOld.ctx.services.vault.resolveReferences('$secret:db_password')).rejects.toMatchObject({
      code: 'VAULT.RESOLVE_FAILED',
      message:
        'Vault reference $secret:db_password cannot be resolved: the secret cannot be decrypted with the configured keys',
    });
    expect(onOld.logText()).toContain('vault secret cannot be decrypted with the configured keys');
    expect(onOld.logText()).not.toContain('pw-one');
  });

  it('SVC_VAULT_PREVIOUS_KEYS keeps old tokens readable while new writes use the new key', async () => {
    const a = await open({ SVC_VAULT_ENCRYPTION_KEY: K1 });
    const ids = await seed(a);
    // Step 1 of a zero-downtime roll: every process gets the new key first, the old one as previous.
    const rolled = await open({
      SVC_VAULT_ENCRYPTION_KEY: K2,
      SVC_VAULT_PREVIOUS_KEYS: ` other-old , ${K1},`,
    });
    expect(rolled.ctx.config.vaultPreviousKeys).toEqual(['other-old', K1]);
    expect(await rolled.ctx.services.vault.resolveReferences('$secret:db_password')).toBe('pw-one');
    const vault = vaultClient(rolled, (await principal(rolled, ['vault:write'])).headers);
    const created = (
      await vault.create({ key: 'written_after_roll', kind: 'SECRET', value: 'fresh' })
    ).json();
    expect(
      fernetOf(K2)
        .decrypt((await rawEntry(rolled, created.id)).value)
        .toString(),
    ).toBe('fresh');
    // Step 2: rotate what is left under the old key; step 3: drop the previous key.
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    try {
      await rotateKey().run(rolled.ctx, { 'new-key': K2 });
    } finally {
      log.mockRestore();
    }
    const newOnly = await open({ SVC_VAULT_ENCRYPTION_KEY: K2 });
    expect(
      await newOnly.ctx.services.vault.resolveReferences([
        '$secret:db_password',
        '$secret:written_after_roll',
      ]),
    ).toEqual(['pw-one', 'fresh']);
    expect(
      fernetOf(K2)
        .decrypt((await rawEntry(newOnly, ids.gone_secret)).value)
        .toString(),
    ).toBe('deleted-three');
  });

  it('re-encrypts the MFA secrets of users too: MFA still works once the old key is retired', async () => {
    const clock = manualClock();
    const a = await open({}, clock);
    await seed(a);
    // One user with MFA enabled, one with a set-up that is not verified yet (the pending secret).
    const enabled = await account(a);
    const h = bearer(expectTokens(await login(a, enabled)).access_token);
    const secret = (await call(a, 'POST', '/auth/mfa/setup', undefined, h)).body.secret as string;
    const code = { code: codeAt(secret, clock.now().getTime()) };
    expect((await call(a, 'POST', '/auth/mfa/verify', code, h)).status).toBe(200);
    expect((await call(a, 'PATCH', '/auth/mfa/enable', { enabled: true }, h)).status).toBe(200);
    const pending = await account(a);
    const hp = bearer(expectTokens(await login(a, pending)).access_token);
    const pendingSecret = (await call(a, 'POST', '/auth/mfa/setup', undefined, hp)).body.secret as string;

    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    try {
      await rotateKey().run(a.ctx, { 'new-key': K2 });
      expect(log).toHaveBeenCalledWith(
        expect.stringMatching(
          /^re-encrypted 3 secret\(s\) under the new key, and (.* and )?2 MFA secret\(s\) of users\./,
        ),
      );
    } finally {
      log.mockRestore();
    }
    clock.advance(30_000); // the codes used so far are spent

    // Step 3: the old key is gone; sign-in with MFA and verifying the pending set-up still work.
    const b = await open({ SVC_VAULT_ENCRYPTION_KEY: K2 }, clock);
    const challenge = await login(b, enabled);
    expect(challenge.body.mfa_required).toBe(true);
    const now = clock.now().getTime();
    expectTokens(
      await call(b, 'POST', '/auth/login/mfa_verify', {
        mfa_token: challenge.body.mfa_token,
        code: codeAt(secret, now),
      }),
    );
    const hb = bearer(expectTokens(await login(b, pending)).access_token);
    const verified = await call(b, 'POST', '/auth/mfa/verify', { code: codeAt(pendingSecret, now) }, hb);
    expect(verified.body).toEqual({ verified: true });

    // A process that knows only the retired key cannot read them: a clear 503, not a 500 with a stack.
    clock.advance(30_000);
    const old = await open({ SVC_VAULT_ENCRYPTION_KEY: K1 }, clock);
    const again = await login(old, enabled);
    const refused = await call(old, 'POST', '/auth/login/mfa_verify', {
      mfa_token: again.body.mfa_token,
      code: codeAt(secret, clock.now().getTime()),
    });
    expectError(refused, 503, 'SERVICE_UNAVAILABLE');
    expect(refused.body.message).toBe(
      'MFA is unavailable for this account: its MFA secret cannot be decrypted with the configured vault keys',
    );
    const ho = bearer(expectTokens(await login(old, pending)).access_token);
    expectError(
      await call(old, 'POST', '/auth/mfa/verify', { code: '123456' }, ho),
      503,
      'SERVICE_UNAVAILABLE',
    );
    expect(old.logText()).toContain('MFA secret cannot be decrypted with the configured vault keys');
    expect(old.logText()).not.toContain(secret);
  });

  it('aborts without changing anything when a secret cannot be decrypted, naming it', async () => {
    const a = await open();
    const ids = await seed(a);
    // A row written under a key this process does not know (e.g. a lost key).
    const stray = fernetOf('some-forgotten-key').encrypt('unknown');
    await a.ctx.store.db
      .updateTable('vault_entry')
      .set({ value: stray })
      .where('id', '=', ids.api_token)
      .execute();
    const before = await a.ctx.store.db
      .selectFrom('vault_entry')
      .select(['id', 'value'])
      .orderBy('id')
      .execute();
    await expect(a.ctx.services.vault.rotateKey(K2)).rejects.toThrow(
      /rotation aborted, nothing changed: 1 secret\(s\) cannot be decrypted .*: api_token$/,
    );
    await expect(rotateKey().run(a.ctx, { 'new-key': K2 })).rejects.toMatchObject({
      code: 'SVC_CLI',
      message: expect.stringContaining('rotation aborted'),
    });
    const after = await a.ctx.store.db
      .selectFrom('vault_entry')
      .select(['id', 'value'])
      .orderBy('id')
      .execute();
    expect(after).toEqual(before);
    // The process still uses its old key.
    expect(await a.ctx.services.vault.resolveReferences('$secret:db_password')).toBe('pw-one');
  });

  it('an MFA secret no configured key reads aborts the rotation too, naming the user', async () => {
    const a = await open();
    const ids = await seed(a);
    const user = await account(a);
    await a.ctx.store.db
      .insertInto('auth_user')
      .values({
        user_id: user.id,
        mfa_secret: fernetOf('some-forgotten-key').encrypt('JBSWY3DPEHPK3PXP'),
        mfa_last_step: null,
        mfa_pending_secret: null,
        mfa_pending_verified: 0,
        mfa_pending_last_step: null,
        access_token_ttl_seconds: null,
        refresh_token_ttl_seconds: null,
        password_reset_required: 0,
        updated_at: null,
        updated_by: null,
      })
      .execute();
    await expect(a.ctx.services.vault.rotateKey(K2)).rejects.toThrow(
      new RegExp(`rotation aborted, nothing changed: 1 secret\\(s\\) .*: user ${user.id} \\(MFA secret\\)$`),
    );
    // The vault's entries were rolled back with it.
    expect(
      fernetOf(K1)
        .decrypt((await rawEntry(a, ids.db_password)).value)
        .toString(),
    ).toBe('pw-one');
  });

  it('checks its arguments: exactly one of --new-key and --new-key-file, not empty', async () => {
    const a = await open();
    await seed(a);
    for (const values of [{}, { 'new-key': K2, 'new-key-file': '/x' }, { 'new-key': '' }]) {
      await expect(rotateKey().run(a.ctx, values)).rejects.toMatchObject({ code: 'SVC_CLI' });
    }
    await expect(rotateKey().run(a.ctx, { 'new-key-file': join(dir, 'missing') })).rejects.toThrow(
      /cannot read --new-key-file/,
    );
    const file = join(dir, 'new.key');
    writeFileSync(file, `${K2}\n`, { mode: 0o600 });
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    try {
      await rotateKey().run(a.ctx, { 'new-key-file': file });
    } finally {
      log.mockRestore();
    }
    const onNew = await open({ SVC_VAULT_ENCRYPTION_KEY: K2 });
    expect(await onNew.ctx.services.vault.resolveReferences('$secret:db_password')).toBe('pw-one');
  });

  it('runs as `svc vault rotate-key --new-key` from the command line', async () => {
    const a = await open();
    const ids = await seed(a);
    const env = { SVC_DATABASE_URL: database.url, SVC_DATA_DIR: dir, SVC_LOG_LEVEL: 'warn' };
    const done = await runCli(['vault', 'rotate-key', '--new-key', K2], env, 60_000);
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toMatch(/re-encrypted 3 secret\(s\) under the new key/);
    expect(done.stdout + done.stderr).not.toContain(K2);
    expect(
      fernetOf(K2)
        .decrypt((await rawEntry(a, ids.db_password)).value)
        .toString(),
    ).toBe('pw-one');
    const usage = await runCli(['vault', 'rotate-key'], env, 60_000);
    expect(usage.code).toBe(1);
    expect(usage.stderr).toContain(
      'svc: vault rotate-key needs exactly one of --new-key <K> or --new-key-file <path>',
    );
  });
});

describe('vault key configuration', () => {
  it('production refuses to start without SVC_VAULT_ENCRYPTION_KEY', () => {
    expect(() => loadConfig({ NODE_ENV: 'production', SVC_JWT_SECRET: TEST_SECRETS.SVC_JWT_SECRET })).toThrow(
      ConfigError,
    );
    expect(() => loadConfig({ NODE_ENV: 'production', SVC_JWT_SECRET: TEST_SECRETS.SVC_JWT_SECRET })).toThrow(
      'SVC_VAULT_ENCRYPTION_KEY is required when NODE_ENV=production',
    );
    expect(
      loadConfig({ NODE_ENV: 'production', ...TEST_SECRETS, SVC_VAULT_PREVIOUS_KEYS: 'a,,b' })
        .vaultPreviousKeys,
    ).toEqual(['a', 'b']);
  });

  it('`svc serve` exits with one clear line in production without the key', async () => {
    const result = await runCli(
      ['serve'],
      { NODE_ENV: 'production', SVC_VAULT_ENCRYPTION_KEY: '', SVC_DATABASE_URL: 'sqlite::memory:' },
      60_000,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'svc: configuration error: SVC_VAULT_ENCRYPTION_KEY is required when NODE_ENV=production',
    );
  });

  it('outside production a key is generated once into the data directory (0600) and reused', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-vault-dev-'));
    try {
      const env = { SVC_VAULT_ENCRYPTION_KEY: '', SVC_DATA_DIR: dir };
      const first = await startTestApp({ env });
      const vault = vaultClient(first, (await principal(first, ['vault:write'])).headers);
      await vault.create({ key: 'dev_secret', kind: 'SECRET', value: 'dev-value' });
      expect(first.ctx.config.vaultEncryptionKey).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(first.logText()).toContain('generated a development secret (vault-encryption.key)');
      expect(statSync(join(dir, 'vault-encryption.key')).mode & 0o777).toBe(0o600);
      expect(await first.ctx.services.vault.resolveReferences('$secret:dev_secret')).toBe('dev-value');
      const key = first.ctx.config.vaultEncryptionKey;
      await first.close();
      const second = await startTestApp({ env });
      try {
        expect(second.ctx.config.vaultEncryptionKey).toBe(key);
      } finally {
        await second.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
