import type { Logger } from 'pino';
import { AppError } from '../../http/errors.js';
import { randomBase62 } from '../../lib/ids.js';
import type { VaultService } from '../vault/service.js';

/** Every client-held secret has a recognisable prefix (secret scanners) and 256 random bits. */
export const PREFIX = {
  refresh: 'svc_rt_',
  mfa: 'svc_mfa_',
  reset: 'svc_reset_',
  device: 'svc_dev_',
} as const;
const tokenPattern = (prefix: string) => new RegExp(`^${prefix}[0-9A-Za-z]{43}$`);
/** The shape of each kind of token: anything else is refused before a lookup. */
export const PATTERN = {
  refresh: tokenPattern(PREFIX.refresh),
  mfa: tokenPattern(PREFIX.mfa),
  reset: tokenPattern(PREFIX.reset),
  device: tokenPattern(PREFIX.device),
};
export const newToken = (prefix: string) => `${prefix}${randomBase62(32, 43)}`;

/**
 * TOTP secrets at rest: sealed by the vault (Fernet tokens under its key; previous vault keys still
 * open them). A token no configured vault key opens is an operator's mistake (a key retired too
 * early, docs/auth.md): 503 with a clear message, not a 500.
 */
export function createMfaCipher(deps: { vault: Pick<VaultService, 'seal' | 'open'>; log: Logger }) {
  return {
    encrypt: (plain: string) => deps.vault.seal(plain),
    decrypt(token: string, userId: string): string {
      try {
        return deps.vault.open(token);
      } catch {
        deps.log.error(
          { user_id: userId },
          'MFA secret cannot be decrypted with the configured vault keys (SVC_VAULT_ENCRYPTION_KEY, SVC_VAULT_PREVIOUS_KEYS)',
        );
        throw new AppError(
          'SERVICE_UNAVAILABLE',
          'MFA is unavailable for this account: its MFA secret cannot be decrypted with the configured vault keys',
        );
      }
    },
  };
}

export type MfaCipher = ReturnType<typeof createMfaCipher>;
