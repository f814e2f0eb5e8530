import { decodeJwt, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin, type TestPrincipal } from '../helpers/auth.js';
import { TEST_SECRETS } from '../helpers/secrets.js';
import { dialectName } from '../helpers/store.js';

/**
 * Access tokens must carry `exp` and `iat`: a token signed with the right key but never expiring, or
 * without an issue time, or issued in the future beyond the clock-skew allowance (30 s), is refused.
 */
describe(`access token claims (${dialectName})`, () => {
  let t: TestApp;
  let who: TestPrincipal;
  const clock = manualClock(new Date());
  const key = new TextEncoder().encode(TEST_SECRETS.SVC_JWT_SECRET);
  beforeAll(async () => {
    t = await startTestApp({ clock });
    who = await admin(t);
  });
  afterAll(() => t.close());

  const now = () => Math.floor(clock.now().getTime() / 1000);
  const status = async (token: string) =>
    (
      await t.app.inject({
        method: 'GET',
        url: '/api/v1/current_user',
        headers: { authorization: `Bearer ${token}` },
      })
    ).statusCode;
  /** A token with the real one's claims, re-signed with the real key, with `change` applied. */
  const forge = (change: (claims: Record<string, unknown>) => void) => {
    const claims = { ...decodeJwt(who.headers.authorization.slice('Bearer '.length)) } as Record<
      string,
      unknown
    >;
    change(claims);
    return new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(key);
  };

  it('the issued token works, and so does its faithful copy', async () => {
    expect(await status(who.headers.authorization.slice(7))).toBe(200);
    expect(await status(await forge(() => {}))).toBe(200);
  });

  it('no exp: refused (it would never expire)', async () => {
    expect(await status(await forge((c) => delete c.exp))).toBe(401);
  });

  it('no iat, or iat beyond the allowed clock skew in the future: refused', async () => {
    expect(await status(await forge((c) => delete c.iat))).toBe(401);
    expect(await status(await forge((c) => (c.iat = now() + 120)))).toBe(401);
    // Within the 30 s skew allowance: another process's clock may run a little ahead.
    expect(await status(await forge((c) => (c.iat = now() + 20)))).toBe(200);
  });

  it('exp: a few seconds past is tolerated as clock skew, a minute past is not', async () => {
    expect(await status(await forge((c) => (c.exp = now() - 10)))).toBe(200);
    expect(await status(await forge((c) => (c.exp = now() - 60)))).toBe(401);
  });

  it('a token accepted before is judged by the clock again on every use (the verified-token cache)', async () => {
    const token = await forge((c) => {
      c.iat = now();
      c.exp = now() + 60;
    });
    expect(await status(token)).toBe(200);
    expect(await status(token)).toBe(200);
    clock.advance(89_000); // 29 s past exp: within the skew allowance
    expect(await status(token)).toBe(200);
    clock.advance(2_000); // 31 s past exp
    expect(await status(token)).toBe(401);
    clock.advance(-91_000 - 31_000); // back before iat, beyond the allowance
    expect(await status(token)).toBe(401);
    clock.advance(31_000);
    expect(await status(token)).toBe(200);
  });
});
