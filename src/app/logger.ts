import type { LoggerOptions } from 'pino';

/**
 * Paths pino replaces with [REDACTED]. Credentials in headers, and any field that by its name holds a
 * secret, wherever the code logs an object. Values resolved from the vault are never logged at all.
 */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  ...[
    'password',
    'new_password',
    'current_password',
    'token',
    'access_token',
    'refresh_token',
    'id_token',
    'mfa_token',
    'registration_token',
    'secret',
    'authorization',
    'config_json',
  ].flatMap((k) => [k, `*.${k}`]),
];

export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
  };
}
