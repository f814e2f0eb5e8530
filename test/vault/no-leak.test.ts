import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { cliCommands } from '../../src/cli/commands.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { principal } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import { type Recorded, rawEntry, vaultClient } from './helpers.js';

/**
 * The vault's promise: a secret value never reaches a log line, an error message, a response or a
 * stored record in plaintext. Every vault operation runs with canary values at trace log level; then
 * the captured logs, every response body, every error and the database are scanned for them.
 */
describe(`vault secrets never leak (${dialectName})`, () => {
  let t: TestApp;
  const canary = (name: string) => `CANARY-${name}-${randomBytes(6).toString('hex')}`;
  const secrets = {
    created: canary('created'),
    patched: canary('patched'),
    duplicate: canary('duplicate'),
    invalid: canary('invalid'),
    fromVar: canary('fromvar'),
    disabled: canary('disabled'),
    unicode: `${canary('unicode')}-пароль`,
  };
  const record: Recorded[] = [];
  const errors: string[] = [];
  const tokens: string[] = [];

  beforeAll(async () => {
    t = await startTestApp({ env: { SVC_LOG_LEVEL: 'trace' } });
    const rw = vaultClient(
      t,
      (await principal(t, ['vault:read', 'vault:write', 'vault:delete'])).headers,
      record,
    );
    const readOnly = vaultClient(t, (await principal(t, ['vault:read'])).headers, record);
    const anonymous = vaultClient(t, {}, record);

    const a = (
      await rw.create({ key: 'leak_a', kind: 'SECRET', value: secrets.created, description: 'a' })
    ).json();
    await rw.get(a.id);
    await rw.list();
    // (Values are not searchable; a caller putting a secret in a URL would leak it to access logs itself.)
    await rw.list('search=CANARY');
    await rw.patch(a.id, { value: secrets.patched });
    await rw.patch(a.id, { description: 'changed' });
    await rw.patch(a.id, { kind: 'VAR' }); // refused: would reveal the secret
    await rw.patch(a.id, { key: 'leak_a_renamed' });
    await rw.create({ key: 'leak_a_renamed', kind: 'SECRET', value: secrets.duplicate }); // 409
    await rw.create({ key: 'bad key!', kind: 'SECRET', value: secrets.invalid }); // 400
    await rw.create({ key: 'leak_x', kind: 'SECRET', value: secrets.invalid, extra: secrets.invalid }); // 400
    await readOnly.create({ key: 'leak_ro', kind: 'SECRET', value: secrets.invalid }); // 403
    await anonymous.create({ key: 'leak_anon', kind: 'SECRET', value: secrets.invalid }); // 401
    await readOnly.get(a.id);
    await readOnly.list('kind=SECRET');

    const b = (await rw.create({ key: 'leak_b', kind: 'VAR', value: secrets.fromVar })).json();
    record.pop(); // a VAR is plaintext by definition: its create response shows it; from here on it is a SECRET
    await rw.patch(b.id, { kind: 'SECRET' });
    await rw.get(b.id);
    const c = (
      await rw.create({ key: 'leak_c', kind: 'SECRET', value: secrets.disabled, enabled: false })
    ).json();
    await rw.create({ key: 'leak_d', kind: 'SECRET', value: secrets.unicode });

    // The resolver's failures (its successes hand the value to the caller, by design).
    for (const ref of ['$secret:leak_c', '$var:leak_a_renamed', '$secret:leak_missing']) {
      try {
        await t.ctx.services.vault.resolveReferences({ ref, other: '$secret:leak_d' });
      } catch (err) {
        errors.push(JSON.stringify({ message: (err as Error).message, ...(err as object) }));
      }
    }
    // Rotation, then reads after it.
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    try {
      await cliCommands
        .find((cmd) => cmd.name === 'vault rotate-key')
        ?.run(t.ctx, { 'new-key': 'leak-test-new-key' });
      errors.push(...log.mock.calls.map((args) => args.join(' ')));
    } finally {
      log.mockRestore();
    }
    await rw.get(b.id);
    await rw.list('sort_by=updated_at&sort_dir=desc');
    await rw.remove(c.id);
    await rw.get(c.id);
    for (const id of [a.id, b.id, c.id]) tokens.push((await rawEntry(t, id)).value);
  });
  afterAll(() => t.close());

  it('exercised the API broadly (successes and each kind of failure)', () => {
    const statuses = new Set(record.map((r) => r.status));
    for (const s of [200, 400, 401, 403, 404, 409]) expect(statuses).toContain(s);
    expect(errors.length).toBeGreaterThanOrEqual(4);
    expect(t.logText().length).toBeGreaterThan(0);
  });

  it('no response body carries a secret value or its stored token', () => {
    const bodies = record.map((r) => r.body).join('\n');
    for (const value of Object.values(secrets)) expect(bodies).not.toContain(value);
    for (const token of tokens) expect(bodies).not.toContain(token);
    expect(bodies).toContain('******');
  });

  it('no log line carries a secret value or its stored token', () => {
    const logs = t.logText();
    for (const value of Object.values(secrets)) expect(logs).not.toContain(value);
    for (const token of tokens) expect(logs).not.toContain(token);
  });

  it('no error message or CLI output carries a secret value', () => {
    const text = errors.join('\n');
    for (const value of Object.values(secrets)) expect(text).not.toContain(value);
    expect(text).toContain('leak_c');
  });

  it('the database holds no secret in plaintext, in the vault or in the outbox', async () => {
    const rows = await t.ctx.store.db.selectFrom('vault_entry').selectAll().execute();
    const outbox = await t.ctx.store.db.selectFrom('event_delivery_task').selectAll().execute();
    const dump = JSON.stringify([rows, outbox]);
    for (const value of Object.values(secrets)) expect(dump).not.toContain(value);
    for (const row of rows.filter((r) => r.kind === 'SECRET')) expect(row.value).toMatch(/^gAAAAA/);
  });
});
