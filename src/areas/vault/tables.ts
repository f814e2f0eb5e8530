export type VaultKind = 'SECRET' | 'VAR';

export interface VaultEntryTable {
  id: string;
  /** Unique among rows with deleted_at null (partial unique index). */
  key: string;
  kind: VaultKind;
  /** SECRET: a Fernet token (docs/vault.md "Encryption"); VAR: the plaintext. Never selected into a response as is. */
  value: string;
  description: string | null;
  /** 0/1 */
  enabled: number;
  created_at: string;
  updated_at: string;
  updated_by: string | null;
  deleted_at: string | null;
}

export interface VaultTables {
  vault_entry: VaultEntryTable;
}
