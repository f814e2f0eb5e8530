import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  newSecret,
  signDelivery,
  standardSignature,
  standardWebhooksKey,
  standardWebhooksSecret,
} from '../../src/areas/webhooks/signing.js';

const VECTORS = fileURLToPath(new URL('../vectors/standard-webhooks/vectors.json', import.meta.url));
const DOCS = fileURLToPath(new URL('../../docs/webhooks.md', import.meta.url));

interface SignVector {
  name: string;
  secret: string;
  msg_id: string;
  timestamp: number;
  payload: string;
  expected_signature: string;
}
interface VerifyVector {
  name: string;
  secret: string;
  payload: string;
  headers: Record<string, string>;
  now: number;
  valid: boolean;
}
const vectors = JSON.parse(readFileSync(VECTORS, 'utf8')) as {
  sign_vectors: SignVector[];
  verify_vectors: VerifyVector[];
  secret_vectors: Array<{ secret: string; valid: boolean }>;
};

type Verify = (key: Buffer, headers: Record<string, string>, body: string, now?: number) => boolean;
type VerifyX = (secret: string, headers: Record<string, string>, body: string, now?: number) => boolean;

/** The "without a library" code of docs/webhooks.md, loaded as the module a reader would copy. */
let docs: { verifyWebhook: Verify; verifyXSignature: VerifyX };
let dir: string;
beforeAll(async () => {
  const text = readFileSync(DOCS, 'utf8');
  const match = /<!-- tested: verify-without-library -->\s*```js\n([\s\S]*?)```/.exec(text);
  if (!match?.[1]) throw new Error('docs/webhooks.md lost its tested verification block');
  dir = mkdtempSync(join(tmpdir(), 'svc-webhooks-doc-'));
  const file = join(dir, 'verify.mjs');
  writeFileSync(file, match[1]);
  docs = await import(pathToFileURL(file).href);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('Standard Webhooks vectors (test/vectors/standard-webhooks)', () => {
  it('has the vectors', () => {
    expect(vectors.sign_vectors.length).toBeGreaterThanOrEqual(2);
    expect(vectors.verify_vectors.length).toBeGreaterThanOrEqual(10);
  });

  it.each(vectors.sign_vectors.map((v) => [v.name, v] as const))('svc signer reproduces: %s', (_n, v) => {
    expect(standardSignature(standardWebhooksKey(v.secret), v.msg_id, v.timestamp, v.payload)).toBe(
      v.expected_signature,
    );
    // And the library agrees with the same inputs.
    expect(new StandardWebhook(v.secret).sign(v.msg_id, new Date(v.timestamp * 1000), v.payload)).toBe(
      v.expected_signature,
    );
  });

  it.each(vectors.verify_vectors.map((v) => [v.name, v] as const))('docs verifier: %s', (_n, v) => {
    expect(docs.verifyWebhook(standardWebhooksKey(v.secret), v.headers, v.payload, v.now)).toBe(v.valid);
  });

  it.each(vectors.verify_vectors.map((v) => [v.name, v] as const))(
    'standardwebhooks library: %s',
    (_n, v) => {
      vi.useFakeTimers({ toFake: ['Date'], now: v.now * 1000 });
      try {
        const verify = () => new StandardWebhook(v.secret).verify(v.payload, v.headers);
        if (v.valid) expect(verify()).toBeTruthy();
        else expect(verify).toThrow();
      } finally {
        vi.useRealTimers();
      }
    },
  );

  it('an empty key never verifies', () => {
    const valid = vectors.verify_vectors.find((v) => v.valid) as VerifyVector;
    for (const s of vectors.secret_vectors.filter((x) => !x.valid)) {
      expect(docs.verifyWebhook(standardWebhooksKey(s.secret), valid.headers, valid.payload, valid.now)).toBe(
        false,
      );
    }
  });
});

describe('svc delivery signatures', () => {
  const secret = newSecret();
  const body = JSON.stringify({
    specversion: '1.0',
    id: 'e1',
    type: 'svc.user.created',
    data: { name: 'Zoë ✓' },
  });
  const now = 1_767_225_600;
  const headers = signDelivery({
    secret,
    webhookId: 'w1',
    deliveryId: 'd1',
    eventType: 'svc.user.created',
    timestamp: now,
    body,
  }) as unknown as Record<string, string>;

  it('secrets are 64 hex characters from the CSPRNG, all different', () => {
    const many = new Set(Array.from({ length: 200 }, newSecret));
    expect(many.size).toBe(200);
    for (const s of many) expect(s).toMatch(/^[0-9a-f]{64}$/);
  });

  it('carries every header of CONTRACTS §7', () => {
    expect(headers).toMatchObject({
      'content-type': 'application/cloudevents+json; charset=utf-8',
      'x-timestamp': String(now),
      'x-event-type': 'svc.user.created',
      'x-webhook-id': 'w1',
      'x-delivery-id': 'd1',
      'webhook-id': 'd1',
      'webhook-timestamp': String(now),
    });
    expect(headers['x-signature']).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
  });

  it('the docs verifiers and the library accept it; any change is rejected', () => {
    const key = Buffer.from(secret, 'utf8');
    expect(docs.verifyWebhook(key, headers, body, now)).toBe(true);
    expect(docs.verifyXSignature(secret, headers, body, now)).toBe(true);
    vi.useFakeTimers({ toFake: ['Date'], now: now * 1000 });
    try {
      expect(new StandardWebhook(standardWebhooksSecret(secret)).verify(body, headers)).toEqual(
        JSON.parse(body),
      );
    } finally {
      vi.useRealTimers();
    }
    expect(docs.verifyWebhook(key, headers, body.replace('Zoë', 'Zoe'), now)).toBe(false);
    expect(docs.verifyXSignature(secret, headers, body.replace('Zoë', 'Zoe'), now)).toBe(false);
    expect(docs.verifyWebhook(Buffer.from(newSecret(), 'utf8'), headers, body, now)).toBe(false);
    expect(docs.verifyXSignature(newSecret(), headers, body, now)).toBe(false);
    expect(docs.verifyWebhook(key, { ...headers, 'webhook-id': 'd2' }, body, now)).toBe(false);
    expect(docs.verifyWebhook(key, headers, body, now + 301)).toBe(false);
    expect(docs.verifyXSignature(secret, headers, body, now + 301)).toBe(false);
  });
});
