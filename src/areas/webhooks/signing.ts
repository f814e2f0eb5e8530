import { createHmac, randomBytes } from 'node:crypto';

/**
 * Webhook signatures (docs/webhooks.md "The request"). Two schemes on every attempt, keyed with the UTF-8 bytes of the
 * 64-hex secret:
 * - svc's own: `X-Signature: sha256=<hex HMAC-SHA256 over "{X-Timestamp}.{raw body}">`;
 * - Standard Webhooks: `webhook-signature: v1,<base64 HMAC-SHA256 over "{webhook-id}.{webhook-timestamp}.{raw body}">`,
 *   so its libraries verify deliveries with the secret given as `whsec_` + base64(secret).
 */

/** 32 bytes from the CSPRNG as 64 hex characters. */
export function newSecret(): string {
  return randomBytes(32).toString('hex');
}

export function secretHint(secret: string): string {
  return secret.slice(-4);
}

/** The secret as Standard Webhooks libraries take it. */
export function standardWebhooksSecret(secret: string): string {
  return `whsec_${Buffer.from(secret, 'utf8').toString('base64')}`;
}

export function svcSignature(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${timestamp}.${body}`).digest('hex')}`;
}

/**
 * Standard Webhooks `v1` signature. `key` is the raw key bytes; for svc deliveries that is the
 * secret's UTF-8 bytes (use `standardWebhooksKey` for a `whsec_` secret).
 */
export function standardSignature(key: Buffer, msgId: string, timestamp: number, body: string): string {
  return `v1,${createHmac('sha256', key).update(`${msgId}.${timestamp}.${body}`).digest('base64')}`;
}

/** Key bytes of a Standard Webhooks secret: base64 after an optional `whsec_` prefix. */
export function standardWebhooksKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
}

export interface SignedHeaders {
  'content-type': string;
  'x-timestamp': string;
  'x-signature': string;
  'x-event-type': string;
  'x-webhook-id': string;
  'x-delivery-id': string;
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/** Every header of one attempt. `timestamp` is Unix seconds of this attempt (each is signed afresh). */
export function signDelivery(input: {
  secret: string;
  webhookId: string;
  deliveryId: string;
  eventType: string;
  timestamp: number;
  body: string;
}): SignedHeaders {
  const ts = String(input.timestamp);
  return {
    'content-type': 'application/cloudevents+json; charset=utf-8',
    'x-timestamp': ts,
    'x-signature': svcSignature(input.secret, input.timestamp, input.body),
    'x-event-type': input.eventType,
    'x-webhook-id': input.webhookId,
    'x-delivery-id': input.deliveryId,
    'webhook-id': input.deliveryId,
    'webhook-timestamp': ts,
    'webhook-signature': standardSignature(
      Buffer.from(input.secret, 'utf8'),
      input.deliveryId,
      input.timestamp,
      input.body,
    ),
  };
}
