import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { type Config, ConfigError } from '../config/config.js';

/**
 * Outside production a missing vault key or JWT secret is generated once into the data directory
 * (mode 0600) and reused on later starts (README "Configuration"). Production never gets here: config refuses.
 */
export function withDevSecrets(config: Config, log: Logger): Config {
  if (config.production) return config;
  return {
    ...config,
    vaultEncryptionKey: config.vaultEncryptionKey ?? devSecret(config.dataDir, 'vault-encryption.key', log),
    jwtSecret: config.jwtSecret ?? devSecret(config.dataDir, 'jwt-secret.key', log),
  };
}

function devSecret(dir: string, name: string, log: Logger): string {
  const path = join(dir, name);
  if (existsSync(path)) {
    const kept = readFileSync(path, 'utf8').trim();
    // The rule the environment's value meets (SVC_JWT_SECRET at least 32 characters): a truncated
    // or emptied file must not become a weak key.
    if (kept.length < 32) {
      throw new ConfigError(
        `${path} holds a secret shorter than 32 characters; delete it to generate a new one`,
      );
    }
    return kept;
  }
  mkdirSync(dir, { recursive: true });
  const secret = randomBytes(32).toString('base64url');
  writeFileSync(path, `${secret}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
  log.warn({ path }, `generated a development secret (${name}); set it in the environment for production`);
  return secret;
}
