import type { Logger } from 'pino';
import { auditInsert, auditUpdate, softDeleted } from '../../db/audit.js';
import { isUniqueViolation } from '../../db/errors.js';
import type { Store, Tx } from '../../db/store.js';
import type { Collection } from '../../http/collection.js';
import { AppError, notFound, validationError } from '../../http/errors.js';
import { type Clock, iso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { isPlainObject } from '../../lib/objects.js';
import { deriveFernetKey, Fernet, type MultiFernet } from './fernet.js';
import { vaultKeyring } from './keyring.js';
import { REFERENCE } from './references.js';
import { type CreateVaultEntry, MASK, type UpdateVaultEntry, type VaultEntry } from './schemas.js';
import * as db from './store.js';
import type { VaultKind } from './tables.js';

export interface VaultService
  extends Collection<
    VaultEntry,
    CreateVaultEntry,
    UpdateVaultEntry,
    db.VaultListFilters,
    { message: string }
  > {
  /**
   * docs/vault.md "References": every string that is entirely `$secret:<key>` or `$var:<key>` is replaced
   * by the entry's plaintext, through objects and arrays; other values pass through. Resolved values
   * are not rescanned. The input is never modified (stored configs keep their references); containers
   * without a reference are shared with the result. One query for all references.
   * Throws VAULT.DISABLED or VAULT.RESOLVE_FAILED (422), naming the key, never a value.
   */
  resolveReferences<T>(value: T): Promise<T>;
  /**
   * Re-encrypts every SECRET (soft-deleted ones included), and every value registered with
   * registerCiphertexts, under `newKey` in one transaction. Tokens under any configured key are read
   * (MultiFernet); afterwards this process encrypts with `newKey`. `rotated` counts the SECRETs,
   * `also` the registered values, per registration.
   */
  rotateKey(newKey: string): Promise<{ rotated: number; also: { what: string; rotated: number }[] }>;
  /**
   * Another area that stores values encrypted under the vault key (auth's MFA secrets) registers
   * here, so rotateKey re-encrypts them with the vault's entries and no token is left under a
   * retired key. The vault never touches that area's tables: `rotate` does, through its own store.
   * `what` names the values in the rotation's report, e.g. "MFA secret(s) of users".
   */
  registerCiphertexts(what: string, rotate: CiphertextRotator): void;
  /**
   * For another area's secrets that must stay recoverable (webhook signing keys): a Fernet token under
   * the vault key, and back. `open` reads tokens under any configured key; it throws when none reads
   * it. Register the column with registerCiphertexts so key rotation re-encrypts it.
   */
  seal(plaintext: string): string;
  open(token: string): string;
}

/**
 * Re-encrypts one area's values inside the rotation's transaction `tx` and answers how many it
 * re-encrypted. `reencrypt(token, label)` answers the token under the new key; for a token no
 * configured key can read it answers the token unchanged and records `label` (which names the
 * row, never a value): the rotation then rolls back and reports every label.
 */
export type CiphertextRotator = (
  tx: Tx,
  reencrypt: (token: string, label: string) => string,
) => Promise<number>;

export interface VaultDeps {
  store: Store;
  clock: Clock;
  log: Logger;
  /** `vault.encryption_key` (SVC_VAULT_ENCRYPTION_KEY). */
  encryptionKey: string | undefined;
  /** SVC_VAULT_PREVIOUS_KEYS: decrypt only. */
  previousKeys?: readonly string[];
}

/** Deeper values are refused rather than risking the stack (and cycles end here too). */
const MAX_DEPTH = 200;

interface Reference {
  kind: VaultKind;
  key: string;
  text: string;
}

export function createVaultService(deps: VaultDeps): VaultService {
  if (!deps.encryptionKey) {
    // config refuses to start production without it, and dev-secrets fills it elsewhere.
    throw new Error('vault.encryption_key (SVC_VAULT_ENCRYPTION_KEY) is not configured');
  }
  const { store, clock, log } = deps;
  let passphrases = [...new Set([deps.encryptionKey, ...(deps.previousKeys ?? [])])];
  let keyring: MultiFernet = vaultKeyring(passphrases[0], passphrases.slice(1));
  const ciphertexts: { what: string; rotate: CiphertextRotator }[] = [];

  const encrypt = (plaintext: string) =>
    keyring.encrypt(plaintext, { now: Math.floor(clock.now().getTime() / 1000) });

  function toEntry(row: db.VaultRow): VaultEntry {
    return {
      id: row.id,
      key: row.key,
      kind: row.kind,
      // The stored token never leaves the store layer's callers: a SECRET answers the mask.
      value: row.kind === 'SECRET' ? MASK : row.value,
      description: row.description,
      enabled: row.enabled === 1,
      created_at: row.created_at,
      updated_at: row.updated_at,
      updated_by: row.updated_by,
      deleted_at: row.deleted_at,
    };
  }

  const keyExists = (key: string) =>
    new AppError('VAULT.KEY_EXISTS', `A vault entry with key "${key}" already exists`, { key });
  const entryNotFound = () => notFound('VAULT.NOT_FOUND', 'Vault entry');

  function collect(value: unknown, refs: Map<string, Reference>, depth: number): void {
    if (depth > MAX_DEPTH) {
      throw new AppError('VAULT.RESOLVE_FAILED', `Value nests deeper than ${MAX_DEPTH} levels`);
    }
    if (typeof value === 'string') {
      const m = REFERENCE.exec(value);
      if (m && !refs.has(value)) {
        refs.set(value, { kind: m[1] === 'secret' ? 'SECRET' : 'VAR', key: m[2], text: value });
      }
    } else if (Array.isArray(value)) {
      for (const item of value) collect(item, refs, depth + 1);
    } else if (isPlainObject(value)) {
      for (const item of Object.values(value)) collect(item, refs, depth + 1);
    }
  }

  /** Copy-on-write replacement: a container is copied only when something inside it changed. */
  function replace(value: unknown, resolved: Map<string, string>): unknown {
    if (typeof value === 'string') return resolved.has(value) ? resolved.get(value) : value;
    if (Array.isArray(value)) {
      let out: unknown[] | undefined;
      value.forEach((item, i) => {
        const next = replace(item, resolved);
        if (next !== item) {
          out ??= value.slice();
          out[i] = next;
        }
      });
      return out ?? value;
    }
    if (isPlainObject(value)) {
      let out: Record<string, unknown> | undefined;
      for (const [k, item] of Object.entries(value)) {
        const next = replace(item, resolved);
        if (next !== item) {
          out ??= { ...value };
          out[k] = next;
        }
      }
      return out ?? value;
    }
    return value;
  }

  return {
    async create(by, input) {
      const now = iso(clock.now());
      const row: db.VaultRow = {
        id: newId(),
        key: input.key,
        kind: input.kind,
        value: input.kind === 'SECRET' ? encrypt(input.value) : input.value,
        description: input.description ?? null,
        enabled: input.enabled === false ? 0 : 1,
        ...auditInsert(now, by),
      };
      try {
        await store.transaction(async (tx) => {
          if (await db.keyTaken(tx.db, input.key)) throw keyExists(input.key);
          await db.insertEntry(tx.db, row);
        });
      } catch (err) {
        // Two creators racing past the check meet the partial unique index.
        if (isUniqueViolation(err)) throw keyExists(input.key);
        throw err;
      }
      return toEntry(row);
    },

    async list(page, filters) {
      const result = await db.listEntries(store.db, page, filters);
      return { items: result.items.map(toEntry), total: result.total };
    },

    async get(id) {
      const row = await db.findActive(store.db, id);
      if (!row) throw entryNotFound();
      return toEntry(row);
    },

    async update(by, id, input) {
      try {
        return await store.transaction(async (tx) => {
          const row = await db.findActive(tx.db, id);
          if (!row) throw entryNotFound();
          const kind = input.kind ?? row.kind;
          let value = row.value;
          if (input.value !== undefined) {
            value = kind === 'SECRET' ? encrypt(input.value) : input.value;
          } else if (kind !== row.kind) {
            if (kind === 'SECRET') {
              value = encrypt(row.value);
            } else {
              // A write scope must not turn a secret into readable plaintext (docs/vault.md).
              throw validationError('value is required when changing kind from SECRET to VAR', {
                field: 'value',
                in: 'body',
              });
            }
          }
          if (input.key !== undefined && input.key !== row.key && (await db.keyTaken(tx.db, input.key, id))) {
            throw keyExists(input.key);
          }
          const changes = {
            key: input.key ?? row.key,
            kind,
            value,
            description: input.description === undefined ? row.description : input.description,
            enabled: input.enabled === undefined ? row.enabled : input.enabled ? 1 : 0,
            ...auditUpdate(iso(clock.now()), by),
          };
          if (!(await db.updateEntry(tx.db, id, changes))) throw entryNotFound();
          return toEntry({ ...row, ...changes });
        });
      } catch (err) {
        if (isUniqueViolation(err) && input.key !== undefined) throw keyExists(input.key);
        throw err;
      }
    },

    async remove(by, id) {
      return store.transaction(async (tx) => {
        const row = await db.findActive(tx.db, id);
        if (!row) throw entryNotFound();
        const now = iso(clock.now());
        if (!(await db.updateEntry(tx.db, id, softDeleted(now, by)))) throw entryNotFound();
        return { message: `Vault entry "${row.key}" deleted` };
      });
    },

    async resolveReferences<T>(value: T): Promise<T> {
      const refs = new Map<string, Reference>();
      collect(value, refs, 0);
      if (refs.size === 0) return value;
      const keys = [...new Set([...refs.values()].map((r) => r.key))];
      const rows = new Map((await db.findActiveByKeys(store.db, keys)).map((r) => [r.key, r]));
      const resolved = new Map<string, string>();
      for (const ref of refs.values()) {
        const row = rows.get(ref.key);
        const details = { reference: ref.text, key: ref.key };
        if (!row) {
          throw new AppError(
            'VAULT.RESOLVE_FAILED',
            `Vault reference ${ref.text} cannot be resolved: no vault entry with key "${ref.key}"`,
            details,
          );
        }
        if (row.kind !== ref.kind) {
          throw new AppError(
            'VAULT.RESOLVE_FAILED',
            `Vault reference ${ref.text} cannot be resolved: "${ref.key}" is a ${row.kind}, not a ${ref.kind}`,
            details,
          );
        }
        if (row.enabled !== 1) {
          throw new AppError('VAULT.DISABLED', `Vault entry "${ref.key}" is disabled`, details);
        }
        if (row.kind === 'VAR') {
          resolved.set(ref.text, row.value);
          continue;
        }
        try {
          resolved.set(ref.text, keyring.decrypt(row.value).toString('utf8'));
        } catch {
          log.error({ vault_key: ref.key }, 'vault secret cannot be decrypted with the configured keys');
          throw new AppError(
            'VAULT.RESOLVE_FAILED',
            `Vault reference ${ref.text} cannot be resolved: the secret cannot be decrypted with the configured keys`,
            details,
          );
        }
      }
      return replace(value, resolved) as T;
    },

    async rotateKey(newKey) {
      if (!newKey) throw new Error('the new vault key must not be empty');
      const target = new Fernet(deriveFernetKey(newKey));
      const readers = vaultKeyring(newKey, passphrases);
      const now = Math.floor(clock.now().getTime() / 1000);
      const result = await store.transaction(async (tx) => {
        const unreadable: string[] = [];
        // The one re-encryption of the rotation, for the vault's entries and every registered area.
        const reencrypt = (token: string, label: string): string => {
          try {
            return target.encrypt(readers.decrypt(token), { now });
          } catch {
            unreadable.push(label);
            return token;
          }
        };
        // PostgreSQL: lock the rows so a concurrent PATCH cannot be overwritten by the old plaintext.
        // SQLite: one writer at a time; a write racing in from another process fails this commit.
        const rows = await db.allSecrets(tx.db, tx.dialect === 'postgres');
        for (const row of rows) {
          const label = row.deleted_at ? `${row.key} (deleted, id ${row.id})` : row.key;
          const value = reencrypt(row.value, label);
          if (value !== row.value) await db.setValue(tx.db, row.id, value);
        }
        const also: { what: string; rotated: number }[] = [];
        for (const c of ciphertexts) also.push({ what: c.what, rotated: await c.rotate(tx, reencrypt) });
        if (unreadable.length > 0) {
          throw new Error(
            `rotation aborted, nothing changed: ${unreadable.length} secret(s) cannot be decrypted with the ` +
              `configured keys (add the key they were written with to SVC_VAULT_PREVIOUS_KEYS): ${unreadable.join(', ')}`,
          );
        }
        return { rotated: rows.length, also };
      });
      passphrases = [...new Set([newKey, ...passphrases])];
      keyring = vaultKeyring(passphrases[0], passphrases.slice(1));
      log.info({ rotated: result.rotated, also: result.also }, 'vault key rotated');
      return result;
    },

    registerCiphertexts(what, rotate) {
      ciphertexts.push({ what, rotate });
    },

    seal: (plaintext) => encrypt(plaintext),
    open: (token) => keyring.decrypt(token).toString('utf8'),
  };
}
