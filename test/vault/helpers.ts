import type { TestApp } from '../helpers/app.js';

export interface Recorded {
  status: number;
  body: string;
}

/** Calls the vault API with the given headers and records every response body (for leak scans). */
export function vaultClient(t: TestApp, headers: Record<string, string>, record: Recorded[] = []) {
  async function call(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) {
    const res = await t.app.inject({
      method,
      url: `/api/v1${url}`,
      headers,
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
    record.push({ status: res.statusCode, body: res.body });
    return { status: res.statusCode, json: () => res.json(), body: res.body };
  }
  return {
    record,
    call,
    create: (body: Record<string, unknown>) => call('POST', '/vault_entry', body),
    get: (id: string) => call('GET', `/vault_entry/${id}`),
    list: (query = '') => call('GET', `/vault_entry${query ? `?${query}` : ''}`),
    patch: (id: string, body: Record<string, unknown>) => call('PATCH', `/vault_entry/${id}`, body),
    remove: (id: string) => call('DELETE', `/vault_entry/${id}`),
  };
}

/** The stored row as the database holds it. */
export async function rawEntry(t: TestApp, id: string) {
  return t.ctx.store.db.selectFrom('vault_entry').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}
