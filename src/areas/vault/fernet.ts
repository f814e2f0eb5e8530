import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  randomBytes,
  timingSafeEqual,
} from 'node:crypto';

/**
 * Fernet (https://github.com/fernet/spec, version 0x80): AES-128-CBC with PKCS#7 padding, then
 * HMAC-SHA256 over version ‖ timestamp ‖ IV ‖ ciphertext. Tokens are interchangeable with Python
 * `cryptography`'s Fernet (docs/vault.md "Encryption"): emitted as padded base64url, accepted padded or not.
 * Written here rather than taken from a package: it is ~100 lines verified by the spec's vectors.
 */

const VERSION = 0x80;
const HEADER = 1 + 8 + 16; // version, timestamp, IV
const MAC = 32;
const BLOCK = 16;
/** Python's Fernet rejects tokens stamped more than this far in the future. */
const MAX_CLOCK_SKEW_SEC = 60;
const B64URL = /^[A-Za-z0-9_-]*={0,2}$/;

/** Any reason a token cannot be read. Deliberately says nothing about the token's contents. */
export class InvalidToken extends Error {
  constructor(reason: string) {
    super(`invalid Fernet token: ${reason}`);
    this.name = 'InvalidToken';
  }
}

/** base64url with `=` padding, the form Python writes. */
export function base64urlPadded(buf: Buffer): string {
  const s = buf.toString('base64url');
  return s + '='.repeat((4 - (s.length % 4)) % 4);
}

/** Strict base64url decoding: padded or unpadded, nothing outside the alphabet. */
export function decodeBase64url(text: string): Buffer | undefined {
  if (!B64URL.test(text)) return undefined;
  const body = text.replace(/=+$/, '');
  if (body.length % 4 === 1) return undefined;
  if (text.length !== body.length && text.length % 4 !== 0) return undefined;
  return Buffer.from(body, 'base64url');
}

/**
 * The Fernet key the vault uses for a configured `vault.encryption_key` (docs/vault.md
 * "Encryption"): base64url(SHA-256(UTF-8 of the setting)), padded as Python writes it.
 */
export function deriveFernetKey(passphrase: string): string {
  return base64urlPadded(createHash('sha256').update(passphrase, 'utf8').digest());
}

export interface EncryptOptions {
  /** Unix seconds stamped into the token (default: now). */
  now?: number;
  /** 16-byte IV (default: random). Only tests pin it. */
  iv?: Buffer;
}

export interface DecryptOptions {
  /**
   * When set, the token must be younger than this many seconds and not stamped more than 60 s in
   * the future (Python's rule). When unset no time check is made: vault secrets do not expire, and
   * a stored secret must stay readable whatever the clocks of the servers say.
   */
  ttlSec?: number;
  /** Unix seconds to check against (default: now). */
  now?: number;
}

export class Fernet {
  private readonly signingKey: Buffer;
  private readonly encryptionKey: Buffer;

  /** `key`: 32 bytes, or their base64url text (padded or not) as Fernet.generate_key() gives. */
  constructor(key: string | Buffer) {
    const raw = typeof key === 'string' ? decodeBase64url(key) : key;
    if (raw?.length !== 32) throw new Error('a Fernet key is 32 bytes of base64url');
    this.signingKey = Buffer.from(raw.subarray(0, 16));
    this.encryptionKey = Buffer.from(raw.subarray(16));
  }

  static generateKey(): string {
    return base64urlPadded(randomBytes(32));
  }

  encrypt(plaintext: string | Buffer, options: EncryptOptions = {}): string {
    const iv = options.iv ?? randomBytes(16);
    if (iv.length !== 16) throw new Error('a Fernet IV is 16 bytes');
    const now = options.now ?? Math.floor(Date.now() / 1000);
    const cipher = createCipheriv('aes-128-cbc', this.encryptionKey, iv);
    const ciphertext = Buffer.concat([
      cipher.update(typeof plaintext === 'string' ? Buffer.from(plaintext, 'utf8') : plaintext),
      cipher.final(),
    ]);
    const header = Buffer.alloc(9);
    header[0] = VERSION;
    header.writeBigUInt64BE(BigInt(now), 1);
    const signed = Buffer.concat([header, iv, ciphertext]);
    const mac = createHmac('sha256', this.signingKey).update(signed).digest();
    return base64urlPadded(Buffer.concat([signed, mac]));
  }

  decrypt(token: string, options: DecryptOptions = {}): Buffer {
    const data = parseToken(token);
    if (options.ttlSec !== undefined) checkTime(data, options.ttlSec, options.now);
    return this.decryptParsed(data);
  }

  /** Decrypts a token already known to be well-formed (and time-checked, if wanted). */
  decryptParsed(data: Buffer): Buffer {
    const signed = data.subarray(0, data.length - MAC);
    const mac = data.subarray(data.length - MAC);
    const expected = createHmac('sha256', this.signingKey).update(signed).digest();
    if (!timingSafeEqual(mac, expected)) throw new InvalidToken('signature does not match');
    const iv = data.subarray(9, HEADER);
    const decipher = createDecipheriv('aes-128-cbc', this.encryptionKey, iv);
    try {
      return Buffer.concat([decipher.update(signed.subarray(HEADER)), decipher.final()]);
    } catch {
      throw new InvalidToken('padding error');
    }
  }
}

/**
 * Several keys at once, as Python's MultiFernet: encrypts with the first, decrypts with whichever
 * matches. This is what keeps old tokens readable while a key rotation is under way.
 */
export class MultiFernet {
  constructor(private readonly fernets: Fernet[]) {
    if (fernets.length === 0) throw new Error('MultiFernet needs at least one key');
  }

  encrypt(plaintext: string | Buffer, options: EncryptOptions = {}): string {
    return this.fernets[0].encrypt(plaintext, options);
  }

  decrypt(token: string, options: DecryptOptions = {}): Buffer {
    const data = parseToken(token);
    if (options.ttlSec !== undefined) checkTime(data, options.ttlSec, options.now);
    for (const f of this.fernets) {
      try {
        return f.decryptParsed(data);
      } catch {
        // try the next key
      }
    }
    throw new InvalidToken('no configured key can decrypt it');
  }

  /** Re-encrypts a token under the first key (Python's MultiFernet.rotate), keeping its timestamp. */
  rotate(token: string): string {
    const data = parseToken(token);
    const plaintext = this.decrypt(token);
    return this.encrypt(plaintext, { now: Number(data.readBigUInt64BE(1)) });
  }
}

function parseToken(token: string): Buffer {
  if (typeof token !== 'string' || token.length === 0) throw new InvalidToken('empty');
  const data = decodeBase64url(token);
  if (!data) throw new InvalidToken('not base64url');
  if (data.length < HEADER + BLOCK + MAC) throw new InvalidToken('too short');
  if (data[0] !== VERSION) throw new InvalidToken('unknown version');
  if ((data.length - HEADER - MAC) % BLOCK !== 0) {
    throw new InvalidToken('ciphertext is not a whole number of blocks');
  }
  return data;
}

function checkTime(data: Buffer, ttlSec: number, now = Math.floor(Date.now() / 1000)): void {
  const stamped = Number(data.readBigUInt64BE(1));
  if (stamped + ttlSec < now) throw new InvalidToken('expired');
  if (now + MAX_CLOCK_SKEW_SEC < stamped) throw new InvalidToken('timestamp is in the future');
}
