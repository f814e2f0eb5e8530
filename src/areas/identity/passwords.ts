import { randomBytes, scrypt as scryptCb, timingSafeEqual } from 'node:crypto';

/**
 * scrypt password hashes. The cost (log2 N) is configurable (`SVC_PASSWORD_HASH_COST`, default 15:
 * N=32768, r=8, p=1) and stored in each hash, so it can be raised without invalidating old hashes.
 */
const R = 8;
const P = 1;
const KEYLEN = 32;

function scrypt(password: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  // scrypt needs 128 * N * r bytes; allow twice that so Node's 32 MiB default never refuses.
  const maxmem = 256 * n * r;
  return new Promise((resolve, reject) =>
    scryptCb(password, salt, KEYLEN, { N: n, r, p, maxmem }, (err, key) =>
      err ? reject(err) : resolve(key),
    ),
  );
}

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  verify(password: string, stored: string): Promise<boolean>;
  /**
   * Verifies against a throwaway hash: called when the email is unknown, so a login costs the same
   * whether or not the account exists (no user enumeration by timing).
   */
  verifyDummy(password: string): Promise<false>;
}

export function createPasswordHasher(cost: number): PasswordHasher {
  const n = 2 ** cost;
  const hash = async (password: string) => {
    const salt = randomBytes(16);
    const key = await scrypt(password, salt, n, R, P);
    return `scrypt$${n}$${R}$${P}$${salt.toString('base64')}$${key.toString('base64')}`;
  };
  const verify = async (password: string, stored: string) => {
    const [scheme, sn, sr, sp, salt, key] = stored.split('$');
    if (scheme !== 'scrypt' || !key) return false;
    const expected = Buffer.from(key, 'base64');
    const actual = await scrypt(password, Buffer.from(salt, 'base64'), Number(sn), Number(sr), Number(sp));
    return actual.length === expected.length && timingSafeEqual(actual, expected);
  };
  let dummy: Promise<string> | undefined;
  return {
    hash,
    verify,
    async verifyDummy(password) {
      dummy ??= hash(randomBytes(16).toString('hex'));
      await verify(password, await dummy);
      return false;
    },
  };
}
