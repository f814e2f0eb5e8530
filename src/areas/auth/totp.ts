import { HOTP, Secret, TOTP } from 'otpauth';

/** docs/auth.md "MFA (TOTP, RFC 6238)": TOTP per RFC 6238 with SHA-1, 6 digits, 30-second steps. */
export const TOTP_PARAMS = { algorithm: 'SHA1', digits: 6, period: 30 } as const;
/** Codes of the current step and one step either side are accepted (clock drift). */
export const TOTP_WINDOW = 1;

export interface TotpOptions {
  algorithm?: 'SHA1' | 'SHA256' | 'SHA512';
  digits?: number;
  period?: number;
}

/** A fresh 160-bit secret (RFC 4226 recommends 160 bits), as base32 text. */
export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32;
}

/** The otpauth:// URI authenticator apps read (issuer and the account's email as label). */
export function otpauthUrl(secretBase32: string, issuer: string, account: string): string {
  return new TOTP({
    issuer,
    label: account,
    secret: Secret.fromBase32(secretBase32),
    ...TOTP_PARAMS,
  }).toString();
}

/** The time step (counter) of a moment: floor(unix seconds / period). */
export function totpStep(atMs: number, period: number = TOTP_PARAMS.period): number {
  return Math.floor(atMs / 1000 / period);
}

/** The code of a secret at a moment. */
export function totpCode(secret: Secret | string, atMs: number, options: TotpOptions = {}): string {
  const opts = { ...TOTP_PARAMS, ...options };
  return TOTP.generate({
    secret: typeof secret === 'string' ? Secret.fromBase32(secret) : secret,
    algorithm: opts.algorithm,
    digits: opts.digits,
    period: opts.period,
    timestamp: atMs,
  });
}

/**
 * The time step whose code `code` is, among the current step ±TOTP_WINDOW, considering only steps
 * after `afterStep` (replay protection: a step once accepted never matches again), or null.
 * The comparison inside otpauth is constant-time.
 */
export function matchTotpStep(
  secretBase32: string,
  code: string,
  atMs: number,
  afterStep: number | null,
): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  const secret = Secret.fromBase32(secretBase32);
  const current = totpStep(atMs);
  for (let step = current - TOTP_WINDOW; step <= current + TOTP_WINDOW; step++) {
    if (afterStep !== null && step <= afterStep) continue;
    const delta = HOTP.validate({
      token: code,
      secret,
      algorithm: TOTP_PARAMS.algorithm,
      digits: TOTP_PARAMS.digits,
      counter: step,
      window: 0,
    });
    if (delta === 0) return step;
  }
  return null;
}
