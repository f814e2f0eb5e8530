import { createHmac, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { expect } from 'vitest';
import type { TestApp } from '../helpers/app.js';

export const VECTORS_DIR = new URL('../vectors/totp/', import.meta.url);
export const readVector = <T>(name: string): T =>
  JSON.parse(readFileSync(new URL(name, VECTORS_DIR), 'utf8'));

const unique = () => randomBytes(5).toString('hex');

export interface Account {
  id: string;
  email: string;
  password: string;
}

/** A user made through the identity service (its own tests cover that path), not signed in. */
export async function account(t: TestApp, roleKeys: string[] = []): Promise<Account> {
  const email = `a-${unique()}@example.test`;
  const password = `pw-${unique()}-secret`;
  const user = await t.ctx.services.identity.createUser(null, { email, password, role_keys: roleKeys });
  return { id: user.id, email, password };
}

export interface Call {
  status: number;
  body: Record<string, unknown> & { code?: string; message?: string };
  headers: Record<string, unknown>;
  raw: string;
}

/** Every response body a test saw, for the leak scan. */
export const seenBodies: string[] = [];

export async function call(
  t: TestApp,
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT',
  url: string,
  payload?: unknown,
  headers: Record<string, string> = {},
  remoteAddress?: string,
): Promise<Call> {
  const res = await t.app.inject({
    method,
    url: `/api/v1${url}`,
    headers,
    ...(payload !== undefined && { payload: payload as object }),
    ...(remoteAddress && { remoteAddress }),
  });
  seenBodies.push(res.body);
  return {
    status: res.statusCode,
    body: res.body ? res.json() : {},
    headers: res.headers as Record<string, unknown>,
    raw: res.body,
  };
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

export async function login(t: TestApp, a: Pick<Account, 'email' | 'password'>, remoteAddress?: string) {
  return call(
    t,
    'POST',
    '/auth/login/credentials',
    { email: a.email, password: a.password },
    {},
    remoteAddress,
  );
}

/** Asserts the CONTRACTS §3 token response and answers it typed. */
export function expectTokens(res: Call) {
  expect(res.status, res.raw).toBe(200);
  expect(res.body).toMatchObject({ token_type: 'bearer' });
  expect(typeof res.body.access_token).toBe('string');
  expect(res.body.expires_in).toBeGreaterThan(0);
  expect(res.body.refresh_token).toMatch(/^svc_rt_[0-9A-Za-z]{43}$/);
  expect(res.body.refresh_expires_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  expect(res.body.refresh_expires_in).toBeGreaterThan(0);
  return res.body as {
    access_token: string;
    token_type: 'bearer';
    expires_in: number;
    refresh_token: string;
    refresh_expires_at: string;
    refresh_expires_in: number;
    device_id?: string;
  };
}

export function expectError(res: Call, status: number, code: string) {
  expect(res.status, res.raw).toBe(status);
  expect(res.body.code, res.raw).toBe(code);
  expect(typeof res.body.message).toBe('string');
}

// ---- an independent HOTP/TOTP (RFC 4226 / 6238) over node:crypto, checked against the RFC vectors,
// used to compute the codes a user's authenticator app would show.
const B32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
export function base32Decode(text: string): Buffer {
  const clean = text.replace(/=+$/, '').toUpperCase();
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const ch of clean) {
    const idx = B32.indexOf(ch);
    if (idx < 0) throw new Error(`not base32: ${ch}`);
    value = (value << 5) | idx;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

export function hotp(key: Buffer, counter: number, digits = 6, algorithm = 'sha1'): string {
  const msg = Buffer.alloc(8);
  msg.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac(algorithm, key).update(msg).digest();
  const offset = mac[mac.length - 1] & 0x0f;
  const bin = mac.readUInt32BE(offset) & 0x7fffffff;
  return String(bin % 10 ** digits).padStart(digits, '0');
}

/** The 6-digit code an authenticator shows for `secret` (base32) at `ms` (+ `stepOffset` steps). */
export const codeAt = (secret: string, ms: number, stepOffset = 0) =>
  hotp(base32Decode(secret), Math.floor(ms / 30_000) + stepOffset);
