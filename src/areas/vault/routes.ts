import { anyScope } from '../../http/access.js';
import type { App } from '../../http/app.js';
import { envelope, splitListQuery } from '../../http/list.js';
import { errorAnswers, MessageBody } from '../../http/schemas.js';
import {
  CreateVaultEntry,
  UpdateVaultEntry,
  VaultEntry,
  VaultIdParams,
  VaultListQuery,
  VaultListResponse,
} from './schemas.js';
import type { VaultService } from './service.js';

const tags = ['vault'];

/** /vault_entry (docs/vault.md "Entries"). HTTP only: schema, scope, one service call. */
export function registerVaultRoutes(api: App, { vault }: { vault: VaultService }): void {
  api.post(
    '/vault_entry',
    {
      config: anyScope('vault:write'),
      schema: {
        operationId: 'createVaultEntry',
        tags,
        summary: 'Create a vault entry (a SECRET is encrypted and answered as ******)',
        body: CreateVaultEntry,
        response: { 200: VaultEntry, ...errorAnswers(409) },
      },
    },
    (request) => vault.create(request.principal.userId, request.body),
  );

  api.get(
    '/vault_entry',
    {
      config: anyScope('vault:read'),
      schema: {
        operationId: 'listVaultEntries',
        tags,
        summary: 'List vault entries',
        querystring: VaultListQuery,
        response: { 200: VaultListResponse },
      },
    },
    async (request) => {
      const { page, filters } = splitListQuery(request.query);
      return envelope('vault_entries', await vault.list(page, filters), page);
    },
  );

  api.get(
    '/vault_entry/:id',
    {
      config: anyScope('vault:read'),
      schema: {
        operationId: 'getVaultEntry',
        tags,
        summary: 'Get a vault entry',
        params: VaultIdParams,
        response: { 200: VaultEntry, ...errorAnswers(404) },
      },
    },
    (request) => vault.get(request.params.id),
  );

  api.patch(
    '/vault_entry/:id',
    {
      config: anyScope('vault:write'),
      schema: {
        operationId: 'updateVaultEntry',
        tags,
        summary: 'Update a vault entry (omitting value keeps it; SECRET to VAR needs a new value)',
        params: VaultIdParams,
        body: UpdateVaultEntry,
        response: { 200: VaultEntry, ...errorAnswers(404, 409) },
      },
    },
    (request) => vault.update(request.principal.userId, request.params.id, request.body),
  );

  api.delete(
    '/vault_entry/:id',
    {
      config: anyScope('vault:delete'),
      schema: {
        operationId: 'deleteVaultEntry',
        tags,
        summary: 'Delete a vault entry (soft)',
        params: VaultIdParams,
        response: { 200: MessageBody, ...errorAnswers(404) },
      },
    },
    (request) => vault.remove(request.principal.userId, request.params.id),
  );
}
