import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deriveFernetKey, Fernet } from '../../src/areas/vault/fernet.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { principal } from '../helpers/auth.js';
import { TEST_SECRETS } from '../helpers/secrets.js';
import { dialectName } from '../helpers/store.js';
import { rawEntry, vaultClient } from './helpers.js';

const testKey = new Fernet(deriveFernetKey(TEST_SECRETS.SVC_VAULT_ENCRYPTION_KEY));
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe(`vault entries over HTTP (${dialectName})`, () => {
  let t: TestApp;
  let vault: ReturnType<typeof vaultClient>;
  let userId: string;

  beforeAll(async () => {
    t = await startTestApp();
    const p = await principal(t, ['vault:read', 'vault:write', 'vault:delete']);
    userId = p.userId;
    vault = vaultClient(t, p.headers);
  });
  afterAll(() => t.close());

  describe('create', () => {
    it('stores a SECRET as a Fernet token under the configured key and answers the mask', async () => {
      const res = await vault.create({
        key: 'smtp_password',
        kind: 'SECRET',
        value: 'hunter2',
        description: 'SMTP',
      });
      expect(res.status).toBe(200);
      const entry = res.json();
      expect(entry).toEqual({
        id: expect.any(String),
        key: 'smtp_password',
        kind: 'SECRET',
        value: '******',
        description: 'SMTP',
        enabled: true,
        created_at: expect.stringMatching(ISO),
        updated_at: expect.stringMatching(ISO),
        updated_by: userId,
        deleted_at: null,
      });
      const row = await rawEntry(t, entry.id);
      expect(row.value).not.toContain('hunter2');
      expect(row.value).toMatch(/^gAAAAA[A-Za-z0-9_-]+=*$/);
      expect(testKey.decrypt(row.value).toString('utf8')).toBe('hunter2');
      expect((await vault.get(entry.id)).json().value).toBe('******');
    });

    it('stores and answers a VAR in plaintext; description defaults to null, enabled to true', async () => {
      const res = await vault.create({ key: 'base_url', kind: 'VAR', value: 'https://example.test' });
      expect(res.status).toBe(200);
      const entry = res.json();
      expect(entry).toMatchObject({
        key: 'base_url',
        kind: 'VAR',
        value: 'https://example.test',
        description: null,
        enabled: true,
      });
      expect((await rawEntry(t, entry.id)).value).toBe('https://example.test');
      expect((await vault.get(entry.id)).json()).toEqual(entry);
    });

    it('accepts enabled false on create', async () => {
      const res = await vault.create({ key: 'off_at_birth', kind: 'VAR', value: 'x', enabled: false });
      expect(res.status).toBe(200);
      expect(res.json().enabled).toBe(false);
    });

    it('refuses a key already held by an active entry with 409 VAULT.KEY_EXISTS', async () => {
      await vault.create({ key: 'dup_key', kind: 'VAR', value: 'one' });
      const res = await vault.create({ key: 'dup_key', kind: 'SECRET', value: 'two' });
      expect(res.status).toBe(409);
      expect(res.json()).toEqual({
        code: 'VAULT.KEY_EXISTS',
        message: 'A vault entry with key "dup_key" already exists',
        details: { key: 'dup_key' },
      });
    });

    it('lets exactly one of several concurrent creators of one key win', async () => {
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          vault.create({ key: 'raced_key', kind: 'SECRET', value: `v${i}` }),
        ),
      );
      expect(results.filter((r) => r.status === 200)).toHaveLength(1);
      expect(results.filter((r) => r.status === 409).every((r) => r.json().code === 'VAULT.KEY_EXISTS')).toBe(
        true,
      );
      expect(results.filter((r) => r.status === 409)).toHaveLength(5);
    });

    it.each([
      ['bad-key', 'a hyphen'],
      ['with space', 'a space'],
      ['dotted.key', 'a dot'],
      ['', 'nothing'],
      ['ключ', 'non-ASCII letters'],
    ])('refuses the key %j (%s) with 400 naming the field', async (key) => {
      const res = await vault.create({ key, kind: 'VAR', value: 'x' });
      expect(res.status).toBe(400);
      expect(res.json()).toMatchObject({ code: 'VALIDATION_ERROR', details: { field: 'key' } });
    });

    it('refuses an unknown kind with the allowed values', async () => {
      const res = await vault.create({ key: 'k1', kind: 'TOKEN', value: 'x' });
      expect(res.status).toBe(400);
      expect(res.json().code).toBe('VALIDATION_ERROR');
      expect(res.json().details.allowed_values).toEqual(['SECRET', 'VAR']);
    });

    it.each([
      [{ kind: 'VAR', value: 'x' }, 'key'],
      [{ key: 'k2', value: 'x' }, 'kind'],
      [{ key: 'k3', kind: 'VAR' }, 'value'],
    ])('requires key, kind and value (%j misses %s)', async (body, field) => {
      const res = await vault.create(body);
      expect(res.status).toBe(400);
      expect(res.json()).toMatchObject({ code: 'VALIDATION_ERROR', details: { field } });
    });

    it('refuses unknown fields and wrong types', async () => {
      const unknown = await vault.create({ key: 'k4', kind: 'VAR', value: 'x', owner: 'me' });
      expect(unknown.status).toBe(400);
      expect(unknown.json().details.field).toBe('owner');
      const typed = await vault.create({ key: 'k5', kind: 'VAR', value: 42 });
      expect(typed.status).toBe(400);
      expect(typed.json().details.field).toBe('value');
      const notJson = await t.app.inject({
        method: 'POST',
        url: '/api/v1/vault_entry',
        headers: { ...(await principal(t, ['vault:write'])).headers, 'content-type': 'application/json' },
        payload: '{"key":',
      });
      expect(notJson.statusCode).toBe(400);
      expect(notJson.json().code).toBe('VALIDATION_ERROR');
    });
  });

  describe('list', () => {
    let l: ReturnType<typeof vaultClient>;
    beforeAll(async () => {
      // Start the list from an empty vault (entries of earlier tests are set aside) so it holds exactly these.
      const p = await principal(t, ['vault:read', 'vault:write']);
      l = vaultClient(t, p.headers);
      await t.ctx.store.db
        .updateTable('vault_entry')
        .set({ deleted_at: '2026-01-01T00:00:00.000Z' })
        .execute();
      await l.create({
        key: 'alpha_token',
        kind: 'SECRET',
        value: 'needle-in-value',
        description: 'Payments API',
      });
      await l.create({ key: 'Beta_URL', kind: 'VAR', value: 'https://beta.test', description: null });
      await l.create({
        key: 'gamma',
        kind: 'VAR',
        value: 'g',
        description: 'token for gamma',
        enabled: false,
      });
      await l.create({ key: 'delta_secret', kind: 'SECRET', value: 'd' });
    });

    it('answers vault_entries with the envelope, default order key ascending', async () => {
      const res = await l.list();
      expect(res.status).toBe(200);
      const body = res.json();
      expect(body).toMatchObject({ total: 4, limit: 25, offset: 0, has_next: false, has_previous: false });
      expect(body.vault_entries.map((e: { key: string }) => e.key)).toEqual([
        'Beta_URL',
        'alpha_token',
        'delta_secret',
        'gamma',
      ]);
      for (const e of body.vault_entries) expect(e.value).toBe(e.kind === 'SECRET' ? '******' : e.value);
      expect(body.vault_entries.find((e: { key: string }) => e.key === 'Beta_URL').value).toBe(
        'https://beta.test',
      );
    });

    it('sorts by another column and direction, and names the allowed columns for a bad one', async () => {
      const desc = (await l.list('sort_by=key&sort_dir=desc')).json();
      expect(desc.vault_entries[0].key).toBe('gamma');
      const bad = await l.list('sort_by=value');
      expect(bad.status).toBe(400);
      expect(bad.json()).toMatchObject({
        code: 'VALIDATION_ERROR',
        details: { field: 'sort_by', allowed_values: ['key', 'kind', 'enabled', 'created_at', 'updated_at'] },
      });
    });

    it('filters by kind, enabled and partial key (case-insensitive)', async () => {
      const keys = async (q: string) =>
        (await l.list(q)).json().vault_entries.map((e: { key: string }) => e.key);
      expect(await keys('kind=SECRET')).toEqual(['alpha_token', 'delta_secret']);
      expect(await keys('enabled=false')).toEqual(['gamma']);
      expect(await keys('enabled=true&kind=VAR')).toEqual(['Beta_URL']);
      expect(await keys('key=TA_')).toEqual(['Beta_URL', 'delta_secret']);
      expect(await keys('key=%25')).toEqual([]);
    });

    it('searches key and description, never the value', async () => {
      const keys = async (q: string) =>
        (await l.list(q)).json().vault_entries.map((e: { key: string }) => e.key);
      expect(await keys('search=token')).toEqual(['alpha_token', 'gamma']);
      expect(await keys('search=PAYMENTS')).toEqual(['alpha_token']);
      expect(await keys('search=needle')).toEqual([]);
      expect(await keys('search=beta.test')).toEqual([]);
    });

    it('pages with limit and offset', async () => {
      const first = (await l.list('limit=3')).json();
      expect(first).toMatchObject({ total: 4, limit: 3, offset: 0, has_next: true, has_previous: false });
      const second = (await l.list('limit=3&offset=3')).json();
      expect(second.vault_entries).toHaveLength(1);
      expect(second).toMatchObject({ has_next: false, has_previous: true });
    });

    it('refuses bad query values', async () => {
      for (const q of ['limit=0', 'limit=251', 'offset=-1', 'kind=OTHER', 'enabled=yes', 'nope=1']) {
        const res = await l.list(q);
        expect(res.status, q).toBe(400);
        expect(res.json().code).toBe('VALIDATION_ERROR');
      }
    });
  });

  describe('update', () => {
    it('changes the value of a SECRET (encrypted) and leaves it unchanged when omitted', async () => {
      const { id } = (await vault.create({ key: 'upd_secret', kind: 'SECRET', value: 'first' })).json();
      const before = (await rawEntry(t, id)).value;
      const described = await vault.patch(id, { description: 'now described' });
      expect(described.status).toBe(200);
      expect(described.json()).toMatchObject({
        value: '******',
        description: 'now described',
        kind: 'SECRET',
      });
      expect((await rawEntry(t, id)).value).toBe(before);
      const changed = await vault.patch(id, { value: 'second' });
      expect(changed.json().value).toBe('******');
      expect(testKey.decrypt((await rawEntry(t, id)).value).toString()).toBe('second');
      expect(await t.ctx.services.vault.resolveReferences('$secret:upd_secret')).toBe('second');
    });

    it('changing kind VAR to SECRET encrypts the current value', async () => {
      const { id } = (await vault.create({ key: 'to_secret', kind: 'VAR', value: 'was-plain' })).json();
      const res = await vault.patch(id, { kind: 'SECRET' });
      expect(res.status).toBe(200);
      expect(res.json()).toMatchObject({ kind: 'SECRET', value: '******' });
      const stored = (await rawEntry(t, id)).value;
      expect(stored).not.toContain('was-plain');
      expect(testKey.decrypt(stored).toString()).toBe('was-plain');
    });

    it('changing kind VAR to SECRET with a value encrypts the new value', async () => {
      const { id } = (await vault.create({ key: 'to_secret2', kind: 'VAR', value: 'old' })).json();
      const res = await vault.patch(id, { kind: 'SECRET', value: 'new-secret' });
      expect(res.json()).toMatchObject({ kind: 'SECRET', value: '******' });
      expect(testKey.decrypt((await rawEntry(t, id)).value).toString()).toBe('new-secret');
    });

    it('changing kind SECRET to VAR requires a new value (a secret never becomes readable)', async () => {
      const { id } = (await vault.create({ key: 'to_var', kind: 'SECRET', value: 'keep-hidden' })).json();
      const refused = await vault.patch(id, { kind: 'VAR' });
      expect(refused.status).toBe(400);
      expect(refused.json()).toEqual({
        code: 'VALIDATION_ERROR',
        message: 'value is required when changing kind from SECRET to VAR',
        details: { field: 'value', in: 'body' },
      });
      expect((await vault.get(id)).json()).toMatchObject({ kind: 'SECRET', value: '******' });
      const res = await vault.patch(id, { kind: 'VAR', value: 'public-now' });
      expect(res.status).toBe(200);
      expect(res.json()).toMatchObject({ kind: 'VAR', value: 'public-now' });
      expect((await rawEntry(t, id)).value).toBe('public-now');
    });

    it('renames a key, refuses a taken one with 409, and accepts its own key', async () => {
      const a = (await vault.create({ key: 'rename_a', kind: 'VAR', value: 'a' })).json();
      await vault.create({ key: 'rename_b', kind: 'VAR', value: 'b' });
      const taken = await vault.patch(a.id, { key: 'rename_b' });
      expect(taken.status).toBe(409);
      expect(taken.json().code).toBe('VAULT.KEY_EXISTS');
      expect((await vault.patch(a.id, { key: 'rename_a' })).status).toBe(200);
      const renamed = await vault.patch(a.id, { key: 'rename_c' });
      expect(renamed.json()).toMatchObject({ key: 'rename_c', value: 'a' });
      expect(await t.ctx.services.vault.resolveReferences('$var:rename_c')).toBe('a');
    });

    it('toggles enabled, clears the description with null, and stamps updated_at/updated_by', async () => {
      const created = (
        await vault.create({ key: 'toggle', kind: 'VAR', value: 'v', description: 'd' })
      ).json();
      const res = await vault.patch(created.id, { enabled: false, description: null });
      expect(res.json()).toMatchObject({ enabled: false, description: null, updated_by: userId });
      expect(res.json().updated_at >= created.updated_at).toBe(true);
      expect(res.json().created_at).toBe(created.created_at);
    });

    it('refuses an empty body, unknown fields, a bad key and wrong types', async () => {
      const { id } = (await vault.create({ key: 'patch_bad', kind: 'VAR', value: 'v' })).json();
      for (const body of [{}, { colour: 'red' }, { key: 'bad key' }, { enabled: 'yes' }, { kind: 'X' }]) {
        const res = await vault.patch(id, body);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.json().code).toBe('VALIDATION_ERROR');
      }
    });

    it('answers 404 VAULT.NOT_FOUND for an unknown or deleted entry', async () => {
      const res = await vault.patch('00000000-0000-0000-0000-000000000000', { enabled: false });
      expect(res.status).toBe(404);
      expect(res.json()).toEqual({ code: 'VAULT.NOT_FOUND', message: 'Vault entry not found' });
    });
  });

  describe('get and delete', () => {
    it('answers 404 VAULT.NOT_FOUND for an unknown id', async () => {
      const res = await vault.get('no-such-id');
      expect(res.status).toBe(404);
      expect(res.json()).toEqual({ code: 'VAULT.NOT_FOUND', message: 'Vault entry not found' });
    });

    it('deletes softly with a message; the entry is gone from reads and its key is free again', async () => {
      const { id } = (await vault.create({ key: 'to_delete', kind: 'SECRET', value: 's' })).json();
      const res = await vault.remove(id);
      expect(res.status).toBe(200);
      expect(res.json()).toEqual({ message: 'Vault entry "to_delete" deleted' });
      expect((await rawEntry(t, id)).deleted_at).toMatch(ISO);
      expect((await vault.get(id)).status).toBe(404);
      expect((await vault.patch(id, { enabled: false })).status).toBe(404);
      const again = await vault.remove(id);
      expect(again.status).toBe(404);
      expect(again.json().code).toBe('VAULT.NOT_FOUND');
      expect((await vault.list('key=to_delete')).json().total).toBe(0);
      await expect(t.ctx.services.vault.resolveReferences('$secret:to_delete')).rejects.toMatchObject({
        code: 'VAULT.RESOLVE_FAILED',
      });
      const reused = await vault.create({ key: 'to_delete', kind: 'VAR', value: 'second life' });
      expect(reused.status).toBe(200);
      expect(reused.json().id).not.toBe(id);
    });
  });

  describe('security', () => {
    const routes = [
      {
        method: 'POST',
        url: '/api/v1/vault_entry',
        scope: 'vault:write',
        payload: { key: 'sec_k', kind: 'VAR', value: 'v' },
      },
      { method: 'GET', url: '/api/v1/vault_entry', scope: 'vault:read' },
      { method: 'GET', url: '/api/v1/vault_entry/:id', scope: 'vault:read' },
      { method: 'PATCH', url: '/api/v1/vault_entry/:id', scope: 'vault:write', payload: { enabled: true } },
      { method: 'DELETE', url: '/api/v1/vault_entry/:id', scope: 'vault:delete' },
    ] as const;

    it('declares exactly these routes and scopes', () => {
      const declared = t.routes
        .filter((r) => r.url.startsWith('/api/v1/vault_entry'))
        .map((r) => ({ method: r.method, url: r.url, access: r.access }));
      expect(declared).toEqual(
        expect.arrayContaining(
          routes.map((r) => ({
            method: r.method,
            url: r.url,
            access: { kind: 'scoped', scopes: [r.scope], mode: 'any' },
          })),
        ),
      );
      expect(declared).toHaveLength(routes.length);
    });

    it.each(routes)('$method $url needs credentials (401)', async (route) => {
      const res = await t.app.inject({
        method: route.method,
        url: route.url.replace(':id', 'x'),
        ...('payload' in route ? { payload: route.payload } : {}),
      });
      expect(res.statusCode).toBe(401);
      expect(res.json().code).toBe('AUTH.UNAUTHENTICATED');
    });

    it.each(routes)('$method $url is 403 without $scope, naming it', async (route) => {
      const others = ['vault:read', 'vault:write', 'vault:delete', 'plugin:read', 'webhook:write'].filter(
        (s) => s !== route.scope,
      );
      const p = await principal(t, others);
      const { id } = (
        await vault.create({ key: `sec_${route.method}_${Date.now()}`, kind: 'VAR', value: 'v' })
      ).json();
      const res = await t.app.inject({
        method: route.method,
        url: route.url.replace(':id', id),
        headers: p.headers,
        ...('payload' in route ? { payload: route.payload } : {}),
      });
      expect(res.statusCode).toBe(403);
      expect(res.json()).toMatchObject({
        code: 'AUTH.FORBIDDEN',
        details: { required_scopes: [route.scope], mode: 'any' },
      });
    });

    it.each(routes)('$method $url is allowed with only $scope', async (route) => {
      const p = await principal(t, [route.scope]);
      const { id } = (
        await vault.create({ key: `ok_${route.method}_${Date.now()}`, kind: 'VAR', value: 'v' })
      ).json();
      const res = await t.app.inject({
        method: route.method,
        url: route.url.replace(':id', id),
        headers: p.headers,
        ...('payload' in route
          ? { payload: { ...route.payload, ...(route.method === 'POST' ? { key: `p_${Date.now()}` } : {}) } }
          : {}),
      });
      expect(res.statusCode).toBe(200);
    });
  });
});
