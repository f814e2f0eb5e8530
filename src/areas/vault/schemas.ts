import { type Static, Type } from '@sinclair/typebox';
import { ListQuery, ListResponse, QueryBoolean, Search } from '../../http/list-schemas.js';
import { AuditFields, Description, Id, Nullable, patchBody } from '../../http/schemas.js';

/** Key characters of vault references (docs/vault.md "References"): `[a-zA-Z0-9_]`. */
export const VAULT_KEY_PATTERN = '^[a-zA-Z0-9_]+$';
export const MASK = '******';

const Key = Type.String({
  minLength: 1,
  maxLength: 200,
  pattern: VAULT_KEY_PATTERN,
  description: 'Letters, digits and `_` only; unique among active entries.',
});
const Kind = Type.Union([Type.Literal('SECRET'), Type.Literal('VAR')]);
/** 64 KiB: secrets are passwords, tokens and keys, not files. */
const Value = Type.String({ maxLength: 65_536 });

export const VaultEntry = Type.Object(
  {
    id: Type.String(),
    key: Type.String(),
    kind: Kind,
    value: Type.String({ description: 'The plaintext of a VAR; always `******` for a SECRET.' }),
    description: Nullable(Type.String()),
    enabled: Type.Boolean(),
    ...AuditFields,
  },
  { $id: 'VaultEntry', additionalProperties: false },
);
export type VaultEntry = Static<typeof VaultEntry>;

export const CreateVaultEntry = Type.Object(
  {
    key: Key,
    kind: Kind,
    value: Value,
    description: Description,
    enabled: Type.Optional(Type.Boolean()),
  },
  {
    examples: [
      {
        key: 'ORDERS_API_TOKEN',
        kind: 'SECRET',
        value: 'tok_live_4f9a2c',
        description: 'Bearer token of the orders API',
      },
    ],
    additionalProperties: false,
  },
);
export type CreateVaultEntry = Static<typeof CreateVaultEntry>;

export const UpdateVaultEntry = patchBody(CreateVaultEntry, [{ value: 'tok_live_7b1e8d' }]);
export type UpdateVaultEntry = Static<typeof UpdateVaultEntry>;

export const VAULT_SORTABLE = ['key', 'kind', 'enabled', 'created_at', 'updated_at'] as const;

export const VaultListQuery = ListQuery(
  VAULT_SORTABLE,
  {
    kind: Type.Optional(Kind),
    key: Type.Optional(Search('the key')),
    enabled: Type.Optional(QueryBoolean),
    search: Type.Optional(Search('key and description')),
  },
  { sortBy: 'key', sortDir: 'asc' },
);

export const VaultListResponse = ListResponse('vault_entries', VaultEntry);
export const VaultIdParams = Type.Object({ id: Id }, { additionalProperties: false });
