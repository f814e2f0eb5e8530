import { deriveFernetKey, Fernet, MultiFernet } from './fernet.js';

/**
 * The vault's keys: the configured `vault.encryption_key` first (it encrypts), then any previous
 * keys (they only decrypt), each turned into a Fernet key by SHA-256 + base64url (docs/vault.md "Encryption").
 */
export function vaultKeyring(primary: string, previous: readonly string[] = []): MultiFernet {
  const passphrases = [...new Set([primary, ...previous])];
  return new MultiFernet(passphrases.map((p) => new Fernet(deriveFernetKey(p))));
}
