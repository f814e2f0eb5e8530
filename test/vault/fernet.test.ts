import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  base64urlPadded,
  deriveFernetKey,
  Fernet,
  InvalidToken,
  MultiFernet,
} from '../../src/areas/vault/fernet.js';

const VECTORS = fileURLToPath(new URL('../vectors/fernet/', import.meta.url));
const load = <T>(name: string): T[] => JSON.parse(readFileSync(`${VECTORS}${name}`, 'utf8'));
const seconds = (rfc3339: string) => Date.parse(rfc3339) / 1000;

interface Generate {
  token: string;
  now: string;
  iv: number[];
  src: string;
  secret: string;
}
interface Verify {
  token: string;
  now: string;
  ttl_sec: number;
  src: string;
  secret: string;
}
interface Invalid {
  desc: string;
  token: string;
  now: string;
  ttl_sec: number;
  secret: string;
}

describe('Fernet against the fernet/spec vectors', () => {
  const generate = load<Generate>('generate.json');
  const verify = load<Verify>('verify.json');
  const invalid = load<Invalid>('invalid.json');

  it('has every vector file populated', () => {
    expect(generate.length).toBeGreaterThan(0);
    expect(verify.length).toBeGreaterThan(0);
    expect(invalid).toHaveLength(8);
  });

  it.each(generate.map((v) => [v.token, v] as const))('generate: %s', (_t, v) => {
    const token = new Fernet(v.secret).encrypt(v.src, { now: seconds(v.now), iv: Buffer.from(v.iv) });
    expect(token).toBe(v.token);
  });

  it.each(verify.map((v) => [v.token, v] as const))('verify: %s', (_t, v) => {
    const plain = new Fernet(v.secret).decrypt(v.token, { ttlSec: v.ttl_sec, now: seconds(v.now) });
    expect(plain.toString('utf8')).toBe(v.src);
  });

  it.each(invalid.map((v) => [v.desc, v] as const))('invalid: %s', (_d, v) => {
    const f = new Fernet(v.secret);
    expect(() => f.decrypt(v.token, { ttlSec: v.ttl_sec, now: seconds(v.now) })).toThrow(InvalidToken);
    // MultiFernet applies the same checks.
    expect(() =>
      new MultiFernet([new Fernet(Fernet.generateKey()), f]).decrypt(v.token, {
        ttlSec: v.ttl_sec,
        now: seconds(v.now),
      }),
    ).toThrow(InvalidToken);
  });
});

describe('Fernet token form', () => {
  const key = Fernet.generateKey();
  const f = new Fernet(key);

  it('emits padded base64url tokens and accepts them unpadded', () => {
    for (const text of ['', 'a', 'hello', 'x'.repeat(17), 'ünïcødé ✓']) {
      const token = f.encrypt(text);
      expect(token).toMatch(/^[A-Za-z0-9_-]+=*$/);
      expect(token.length % 4).toBe(0);
      expect(f.decrypt(token).toString('utf8')).toBe(text);
      expect(f.decrypt(token.replace(/=+$/, '')).toString('utf8')).toBe(text);
    }
  });

  it('accepts keys padded or unpadded, and refuses keys that are not 32 bytes', () => {
    expect(new Fernet(key.replace(/=+$/, '')).decrypt(f.encrypt('k')).toString()).toBe('k');
    expect(() => new Fernet('c2hvcnQ=')).toThrow(/32 bytes/);
    expect(() => new Fernet('not base64 !!')).toThrow(/32 bytes/);
  });

  it('refuses malformed padding and foreign characters', () => {
    const token = f.encrypt('hello');
    expect(() => f.decrypt(`${token}=`)).toThrow(InvalidToken);
    expect(() => f.decrypt(token.replace(/[A-Za-z]/, '+'))).toThrow(InvalidToken);
    expect(() => f.decrypt('')).toThrow(InvalidToken);
  });

  it('without a TTL makes no time check (stored secrets do not expire)', () => {
    const old = f.encrypt('old', { now: 1 });
    const future = f.encrypt('future', { now: Math.floor(Date.now() / 1000) + 36_000 });
    expect(f.decrypt(old).toString()).toBe('old');
    expect(f.decrypt(future).toString()).toBe('future');
    expect(() => f.decrypt(future, { ttlSec: 60 })).toThrow(/future/);
  });

  it('round-trips any bytes (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        const buf = Buffer.from(bytes);
        expect(f.decrypt(f.encrypt(buf)).equals(buf)).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  it('a flipped bit anywhere is rejected (property)', () => {
    const token = f.encrypt('integrity matters');
    const raw = Buffer.from(token, 'base64url');
    fc.assert(
      fc.property(fc.integer({ min: 0, max: raw.length * 8 - 1 }), (bit) => {
        const copy = Buffer.from(raw);
        copy[bit >> 3] ^= 1 << (bit & 7);
        expect(() => f.decrypt(base64urlPadded(copy))).toThrow(InvalidToken);
      }),
      { numRuns: 300 },
    );
  });
});

describe('vault key derivation and MultiFernet', () => {
  it('derives base64url(SHA-256(passphrase)), padded, as Python does', () => {
    // python: base64.urlsafe_b64encode(hashlib.sha256(b"test-vault-encryption-key").digest())
    expect(deriveFernetKey('test-vault-encryption-key')).toBe('m06vamnysDpwluym2K3JigFeKUkDotHby68RrEf7jws=');
  });

  it('reads a token written by Python cryptography under the derived key', () => {
    // python: Fernet(<key above>).encrypt(b"written by python cryptography")
    const token =
      'gAAAAABrAZ9_NxMp60YfyQQi8Kbvlv1ivtMzNsb-r4WKffCEy4vykKVoq81sX2bW1_JJ5-pdatj-aC65gC-rlDdJy_9xQXBe9fCPW1ORba8GZNFBR2f712Y=';
    const f = new Fernet(deriveFernetKey('test-vault-encryption-key'));
    expect(f.decrypt(token).toString('utf8')).toBe('written by python cryptography');
  });

  it('encrypts with the first key and decrypts with any', () => {
    const oldF = new Fernet(deriveFernetKey('old'));
    const newF = new Fernet(deriveFernetKey('new'));
    const multi = new MultiFernet([newF, oldF]);
    const legacy = oldF.encrypt('s3cret');
    expect(multi.decrypt(legacy).toString()).toBe('s3cret');
    const fresh = multi.encrypt('s3cret');
    expect(newF.decrypt(fresh).toString()).toBe('s3cret');
    expect(() => oldF.decrypt(fresh)).toThrow(InvalidToken);
    const rotated = multi.rotate(legacy);
    expect(newF.decrypt(rotated).toString()).toBe('s3cret');
    expect(Buffer.from(rotated, 'base64url').subarray(1, 9)).toEqual(
      Buffer.from(legacy, 'base64url').subarray(1, 9),
    );
    expect(() => new MultiFernet([oldF]).decrypt(fresh)).toThrow(/no configured key/);
  });
});
