import type { KyselyPlugin } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVaultService } from '../../src/areas/vault/service.js';
import { AppError } from '../../src/http/errors.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { principal } from '../helpers/auth.js';
import { TEST_SECRETS } from '../helpers/secrets.js';
import { dialectName } from '../helpers/store.js';
import { vaultClient } from './helpers.js';

/** Rejects with the AppError the resolver threw, for assertions on code, status and message. */
async function failure(promise: Promise<unknown>): Promise<AppError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  }
  throw new Error('expected the resolver to fail');
}

describe(`vault reference resolver (${dialectName})`, () => {
  let t: TestApp;
  let resolve: <T>(value: T) => Promise<T>;
  let vault: ReturnType<typeof vaultClient>;

  beforeAll(async () => {
    t = await startTestApp();
    vault = vaultClient(t, (await principal(t, ['vault:read', 'vault:write'])).headers);
    resolve = (v) => t.ctx.services.vault.resolveReferences(v);
    for (const body of [
      { key: 'api_token', kind: 'SECRET', value: 'tok-123' },
      { key: 'region', kind: 'VAR', value: 'eu-west-1' },
      { key: 'points_elsewhere', kind: 'VAR', value: '$secret:api_token' },
      { key: 'secret_ref_text', kind: 'SECRET', value: '$var:region' },
      { key: 'unicode_secret', kind: 'SECRET', value: 'pässwörd ✓ 密码' },
      { key: 'empty_var', kind: 'VAR', value: '' },
      { key: 'switched_off', kind: 'SECRET', value: 'off-value', enabled: false },
      { key: 'var_off', kind: 'VAR', value: 'v', enabled: false },
    ]) {
      expect((await vault.create(body)).status).toBe(200);
    }
  });
  afterAll(() => t.close());

  it('replaces a whole-string $secret: reference with the decrypted value', async () => {
    expect(await resolve('$secret:api_token')).toBe('tok-123');
    expect(await resolve('$secret:unicode_secret')).toBe('pässwörd ✓ 密码');
  });

  it('replaces a whole-string $var: reference with the plaintext (an empty value too)', async () => {
    expect(await resolve('$var:region')).toBe('eu-west-1');
    expect(await resolve('$var:empty_var')).toBe('');
  });

  it('passes through strings that are not entirely a reference', async () => {
    const inputs = [
      'Bearer $secret:api_token',
      '$secret:api_token ',
      ' $secret:api_token',
      '$secret:api_token\n',
      '$secret:api_token/extra',
      '$secret:',
      '$secret:api-token',
      '$SECRET:api_token',
      '$Var:region',
      'secret:api_token',
      '$$secret:api_token',
      '$password:api_token',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a literal, not a template
      '${secret:api_token}',
    ];
    for (const s of inputs) expect(await resolve(s), s).toBe(s);
  });

  it('walks objects and arrays recursively and leaves non-strings untouched', async () => {
    const input = {
      url: 'https://api.test',
      auth: { token: '$secret:api_token', scheme: 'Bearer' },
      regions: ['$var:region', 'us-east-1', ['$var:region', { deep: '$secret:api_token' }]],
      retries: 3,
      ratio: 0.5,
      verbose: false,
      nothing: null,
      '$secret:api_token': 'keys are not references',
    };
    expect(await resolve(input)).toEqual({
      url: 'https://api.test',
      auth: { token: 'tok-123', scheme: 'Bearer' },
      regions: ['eu-west-1', 'us-east-1', ['eu-west-1', { deep: 'tok-123' }]],
      retries: 3,
      ratio: 0.5,
      verbose: false,
      nothing: null,
      '$secret:api_token': 'keys are not references',
    });
    expect(await resolve(['$var:region', 7, true, null])).toEqual(['eu-west-1', 7, true, null]);
    for (const scalar of [42, 0, true, null, undefined]) expect(await resolve(scalar)).toBe(scalar);
  });

  it('does not rescan resolved values', async () => {
    expect(await resolve('$var:points_elsewhere')).toBe('$secret:api_token');
    expect(await resolve('$secret:secret_ref_text')).toBe('$var:region');
    expect(await resolve({ a: '$var:points_elsewhere', b: ['$secret:secret_ref_text'] })).toEqual({
      a: '$secret:api_token',
      b: ['$var:region'],
    });
  });

  it('never modifies its input (stored configs keep their references)', async () => {
    const input = { auth: { token: '$secret:api_token' }, list: ['$var:region'], plain: { x: 1 } };
    const copy = structuredClone(input);
    const out = await resolve(input);
    expect(input).toEqual(copy);
    expect(out).not.toBe(input);
    expect(out.auth).not.toBe(input.auth);
    // Branches without references are shared, not copied.
    expect(out.plain).toBe(input.plain);
    const noRefs = { a: 'b', c: [1, 2] };
    expect(await resolve(noRefs)).toBe(noRefs);
  });

  it('fails with 422 VAULT.DISABLED for a disabled entry, naming the key and not the value', async () => {
    const err = await failure(resolve({ password: '$secret:switched_off' }));
    expect(err.code).toBe('VAULT.DISABLED');
    expect(err.status).toBe(422);
    expect(err.message).toBe('Vault entry "switched_off" is disabled');
    expect(err.details).toEqual({ reference: '$secret:switched_off', key: 'switched_off' });
    expect(JSON.stringify({ m: err.message, d: err.details })).not.toContain('off-value');
    expect((await failure(resolve('$var:var_off'))).code).toBe('VAULT.DISABLED');
  });

  it('fails with 422 VAULT.RESOLVE_FAILED for a missing key', async () => {
    const err = await failure(resolve(['fine', { nested: '$secret:no_such_key' }]));
    expect(err.code).toBe('VAULT.RESOLVE_FAILED');
    expect(err.status).toBe(422);
    expect(err.message).toBe(
      'Vault reference $secret:no_such_key cannot be resolved: no vault entry with key "no_such_key"',
    );
    expect(err.details).toEqual({ reference: '$secret:no_such_key', key: 'no_such_key' });
  });

  it('fails with VAULT.RESOLVE_FAILED when the reference kind does not match the entry', async () => {
    const asVar = await failure(resolve('$var:api_token'));
    expect(asVar.code).toBe('VAULT.RESOLVE_FAILED');
    expect(asVar.message).toBe(
      'Vault reference $var:api_token cannot be resolved: "api_token" is a SECRET, not a VAR',
    );
    expect((await failure(resolve('$secret:region'))).code).toBe('VAULT.RESOLVE_FAILED');
  });

  it('treats a deleted entry as missing', async () => {
    const { id } = (await vault.create({ key: 'short_lived', kind: 'VAR', value: 'x' })).json();
    expect(await resolve('$var:short_lived')).toBe('x');
    await t.ctx.services.vault.remove('test', id);
    expect((await failure(resolve('$var:short_lived'))).code).toBe('VAULT.RESOLVE_FAILED');
  });

  it('fails as a whole: one bad reference means nothing is resolved', async () => {
    const err = await failure(resolve({ good: '$secret:api_token', bad: '$var:missing_one' }));
    expect(err.code).toBe('VAULT.RESOLVE_FAILED');
    expect(JSON.stringify(err)).not.toContain('tok-123');
  });

  it('picks up changes at once (no cache): a disabled entry fails, re-enabled it resolves', async () => {
    const { id } = (await vault.create({ key: 'flip', kind: 'SECRET', value: 'flip-1' })).json();
    expect(await resolve('$secret:flip')).toBe('flip-1');
    await vault.patch(id, { enabled: false });
    expect((await failure(resolve('$secret:flip'))).code).toBe('VAULT.DISABLED');
    await vault.patch(id, { enabled: true, value: 'flip-2' });
    expect(await resolve('$secret:flip')).toBe('flip-2');
  });

  it('refuses values nested deeper than 200 levels with a clear error instead of crashing', async () => {
    let deep: unknown = '$var:region';
    for (let i = 0; i < 300; i++) deep = [deep];
    const err = await failure(resolve(deep));
    expect(err.code).toBe('VAULT.RESOLVE_FAILED');
    expect(err.message).toMatch(/deeper than 200 levels/);
    let ok: unknown = '$var:region';
    for (let i = 0; i < 150; i++) ok = { x: ok };
    expect(JSON.stringify(await resolve(ok))).toContain('eu-west-1');
  });

  it('resolves many references with one query, and none without references', async () => {
    for (let i = 0; i < 40; i++) {
      await vault.create({ key: `bulk_${i}`, kind: i % 2 ? 'SECRET' : 'VAR', value: `bulk-value-${i}` });
    }
    let queries = 0;
    const counting: KyselyPlugin = {
      transformQuery: (args) => {
        queries++;
        return args.node;
      },
      transformResult: async (args) => args.result,
    };
    // The real service over the real store, with a plugin that counts the statements it sends.
    const counted = createVaultService({
      store: { ...t.ctx.store, db: t.ctx.store.db.withPlugin(counting) },
      clock: t.ctx.clock,
      log: t.ctx.log,
      encryptionKey: TEST_SECRETS.SVC_VAULT_ENCRYPTION_KEY,
    });
    const input: Record<string, unknown> = Object.fromEntries(
      Array.from({ length: 40 }, (_, i) => [`k${i}`, i % 2 ? `$secret:bulk_${i}` : `$var:bulk_${i}`]),
    );
    const out: Record<string, unknown> = await counted.resolveReferences({
      ...input,
      again: ['$var:bulk_0', '$secret:bulk_1'],
    });
    expect(out.k7).toBe('bulk-value-7');
    expect(out.k8).toBe('bulk-value-8');
    expect(out.again).toEqual(['bulk-value-0', 'bulk-value-1']);
    expect(queries).toBe(1);
    queries = 0;
    await counted.resolveReferences({ plain: 'text', n: [1, 2, 3] });
    expect(queries).toBe(0);
  });
});
