import createClient from 'openapi-fetch';
import type { components, paths } from './schema';

export type Schemas = components['schemas'];

/**
 * The console's only way to the server: the public API, typed from its OpenAPI document. The access
 * token lives in this module's memory only; the refresh token is an HttpOnly cookie the page never
 * sees (docs/console.md).
 */
let accessToken: string | null = null;
let refreshing: Promise<boolean> | null = null;
let onSignedOut: () => void = () => {};

export const COOKIE_HEADER = { 'Svc-Refresh-Cookie': 'true' } as const;

export function setAccessToken(token: string | null): void {
  accessToken = token;
}
export function whenSignedOut(callback: () => void): void {
  onSignedOut = callback;
}

/**
 * One refresh at a time, across tabs too (Web Locks): refresh tokens rotate, and the same token
 * redeemed twice would end the session as a stolen one.
 */
export function refreshAccess(): Promise<boolean> {
  refreshing ??= (async () => {
    const run = async () => {
      const res = await fetch('/api/v1/auth/refresh', {
        method: 'POST',
        headers: { ...COOKIE_HEADER, 'content-type': 'application/json' },
        body: '{}',
        credentials: 'same-origin',
      });
      if (!res.ok) return false;
      const body = (await res.json()) as { access_token: string };
      accessToken = body.access_token;
      return true;
    };
    try {
      return navigator.locks ? await navigator.locks.request('svc-refresh', run) : await run();
    } finally {
      refreshing = null;
    }
  })();
  return refreshing;
}

/** fetch with the access token; one refresh and retry when it has expired. */
async function authorizedFetch(request: Request): Promise<Response> {
  const retry = request.clone();
  const send = (r: Request) => {
    if (accessToken) r.headers.set('authorization', `Bearer ${accessToken}`);
    return fetch(r);
  };
  const res = await send(request);
  if (res.status !== 401 || !accessToken) return res;
  if (await refreshAccess()) return send(retry);
  accessToken = null;
  onSignedOut();
  return res;
}

export const api = createClient<paths>({ fetch: authorizedFetch });

export interface ApiError {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

/** The data of an answer, or the contract's error body thrown as an Error with its fields. */
export async function ok<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (error !== undefined || data === undefined) {
    const body = (error ?? {}) as Partial<ApiError>;
    throw Object.assign(new Error(body.message ?? `HTTP ${response.status}`), {
      status: response.status,
      code: body.code ?? 'HTTP_ERROR',
      details: body.details,
    });
  }
  return data;
}

export type ApiFailure = Error & { status: number; code: string; details?: Record<string, unknown> };
