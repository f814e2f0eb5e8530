import { Secret } from 'otpauth';
import { describe, expect, it } from 'vitest';
import { matchTotpStep, newTotpSecret, otpauthUrl, totpCode, totpStep } from '../../src/areas/auth/totp.js';
import { base32Decode, hotp, readVector } from './helpers.js';

interface Rfc6238 {
  parameters: { time_step_seconds: number; digits: number };
  secrets: Record<string, { hex: string; base32_derived: string }>;
  vectors: Array<{
    time: number;
    T_hex: string;
    totp: string;
    mode: 'SHA1' | 'SHA256' | 'SHA512';
    secret_hex: string;
  }>;
}
interface Rfc4226 {
  secret_hex: string;
  secret_base32_derived: string;
  vectors: Array<{ counter: number; hotp: string }>;
}

const rfc6238 = readVector<Rfc6238>('rfc6238.json');
const rfc4226 = readVector<Rfc4226>('rfc4226.json');

describe('TOTP against the RFC vectors (test/vectors/totp)', () => {
  it('the test-side HOTP reproduces RFC 4226 Appendix D', () => {
    const key = Buffer.from(rfc4226.secret_hex, 'hex');
    expect(base32Decode(rfc4226.secret_base32_derived).equals(key)).toBe(true);
    expect(rfc4226.vectors).toHaveLength(10);
    for (const v of rfc4226.vectors) expect(hotp(key, v.counter)).toBe(v.hotp);
  });

  it('the service TOTP (otpauth) reproduces all 18 RFC 6238 Appendix B rows, 8 digits, each mode', () => {
    expect(rfc6238.vectors).toHaveLength(18);
    for (const v of rfc6238.vectors) {
      const secret = Secret.fromHex(v.secret_hex);
      expect(totpStep(v.time * 1000)).toBe(Number.parseInt(v.T_hex, 16));
      expect(totpCode(secret, v.time * 1000, { algorithm: v.mode, digits: 8 }), `${v.mode} @ ${v.time}`).toBe(
        v.totp,
      );
      // and the independent implementation agrees
      expect(
        hotp(Buffer.from(v.secret_hex, 'hex'), Number.parseInt(v.T_hex, 16), 8, v.mode.toLowerCase()),
      ).toBe(v.totp);
    }
  });

  it('the contract parameters (SHA-1, 6 digits, 30 s) give the last 6 digits of the SHA-1 rows', () => {
    const b32 = rfc6238.secrets.SHA1.base32_derived;
    for (const v of rfc6238.vectors.filter((x) => x.mode === 'SHA1')) {
      expect(totpCode(b32, v.time * 1000)).toBe(v.totp.slice(-6));
      expect(matchTotpStep(b32, v.totp.slice(-6), v.time * 1000, null)).toBe(Number.parseInt(v.T_hex, 16));
    }
  });

  it('accepts the current step ±1, not ±2, and never a step at or before the last one used', () => {
    const b32 = rfc6238.secrets.SHA1.base32_derived;
    const at = 1_234_567_890_000;
    const step = totpStep(at);
    const codeOf = (s: number) => hotp(base32Decode(b32), s);
    expect(matchTotpStep(b32, codeOf(step - 1), at, null)).toBe(step - 1);
    expect(matchTotpStep(b32, codeOf(step + 1), at, null)).toBe(step + 1);
    expect(matchTotpStep(b32, codeOf(step - 2), at, null)).toBeNull();
    expect(matchTotpStep(b32, codeOf(step + 2), at, null)).toBeNull();
    expect(matchTotpStep(b32, codeOf(step), at, step)).toBeNull();
    expect(matchTotpStep(b32, codeOf(step - 1), at, step - 1)).toBeNull();
    expect(matchTotpStep(b32, codeOf(step + 1), at, step)).toBe(step + 1);
    expect(matchTotpStep(b32, 'abcdef', at, null)).toBeNull();
    expect(matchTotpStep(b32, `${codeOf(step)}0`, at, null)).toBeNull();
  });

  it('new secrets are 160-bit base32 and the otpauth URI names issuer, account and the parameters', () => {
    const s = newTotpSecret();
    expect(s).toMatch(/^[A-Z2-7]{32}$/);
    expect(base32Decode(s)).toHaveLength(20);
    const uri = new URL(otpauthUrl(s, 'svc', 'ada@example.test'));
    expect(uri.protocol).toBe('otpauth:');
    expect(uri.host).toBe('totp');
    expect(decodeURIComponent(uri.pathname)).toBe('/svc:ada@example.test');
    expect(Object.fromEntries(uri.searchParams)).toMatchObject({
      secret: s,
      issuer: 'svc',
      algorithm: 'SHA1',
      digits: '6',
      period: '30',
    });
  });
});
