import { createHash } from 'node:crypto';

/**
 * SHA-256 as hex: how every secret handed to a client (API keys, refresh/MFA/reset/device tokens) is
 * stored, so the store never holds one it could leak, and how limiter keys hide email addresses.
 */
export const sha256Hex = (value: string): string => createHash('sha256').update(value).digest('hex');
