import type { Static } from '@sinclair/typebox';
import type { Config } from '../../config/config.js';
import type { Store, Tx } from '../../db/store.js';
import type { Principal } from '../../http/access.js';
import { AppError } from '../../http/errors.js';
import { VERSION } from '../../version.js';
import { type Access, PERMISSION_LEVELS } from './access.js';
import type { ChainLink } from './folder-store.js';
import * as folderStore from './folder-store.js';
import { mergePatch } from './json-patch.js';
import * as questionnaireStore from './questionnaire-store.js';
import type { JsonObject } from './records.js';
import type { AppConfig } from './schemas.js';

type AppConfigBody = Static<typeof AppConfig>;

import { TRANSITIONS } from './service.js';

/**
 * Configuration answers (docs/platform.md "Config"): the public app config, and the effective config
 * of a folder or questionnaire, made by merging layers with JSON Merge Patch (RFC 7396): the platform
 * defaults, then each folder from the root down, then the questionnaire's own `config`.
 */

/**
 * The platform's defaults, the first layer of every effective config: only settings the server
 * enforces (docs/platform.md "Config"). Any other key a folder or questionnaire sets is merged and
 * served unchanged, for client apps to interpret.
 */
export const QUESTIONNAIRE_CONFIG_DEFAULTS: JsonObject = {
  /** false: a respondent's second active submission is refused (409 SUBMISSION.ALREADY_SUBMITTED). */
  allow_multiple_submissions: false,
};

export type ConfigLayer =
  | { type: 'defaults' }
  | { type: 'folder'; id: string }
  | { type: 'questionnaire'; id: string };

export interface EffectiveConfig {
  config: JsonObject;
  /** The layers merged, in order (later wins). */
  sources: ConfigLayer[];
}

/** Public app config and effective questionnaire/folder config (docs/platform.md#config). */
export interface ConfigService {
  /** The config a questionnaire in `q.folder_id` with its own `q.config` gets: its folders' merged over the defaults. */
  effectiveConfig(tx: Tx, q: { folder_id?: string | null; config?: JsonObject | null }): Promise<JsonObject>;
  /** GET /config: what a client needs to know before signing in. */
  app(): AppConfigBody;
  forFolder(principal: Principal, folderId: string): Promise<EffectiveConfig & { folder_id: string }>;
  forQuestionnaire(
    principal: Principal,
    id: string,
  ): Promise<EffectiveConfig & { questionnaire_id: string; folder_id: string | null }>;
}

export function createConfigService(deps: { config: Config; store: Store; access: Access }): ConfigService {
  const { store, access } = deps;

  /** Merges the defaults and a folder chain (nearest first, as folderChain returns it). */
  function fromChain(chain: readonly ChainLink[]): EffectiveConfig {
    let config = QUESTIONNAIRE_CONFIG_DEFAULTS;
    const sources: ConfigLayer[] = [{ type: 'defaults' }];
    for (const link of [...chain].reverse()) {
      config = mergePatch(config, JSON.parse(link.config) as JsonObject);
      sources.push({ type: 'folder', id: link.id });
    }
    return { config, sources };
  }

  /** The effective config of `q`, its folder chain read inside `tx` (for another area's write). */
  async function effectiveConfig(
    tx: Tx,
    q: { folder_id?: string | null; config?: JsonObject | null },
  ): Promise<JsonObject> {
    const base = fromChain(q.folder_id ? await folderStore.folderChain(tx.db, q.folder_id) : []);
    return mergePatch(base.config, q.config ?? {});
  }

  return {
    effectiveConfig,
    /**
     * What a client app needs once signed in, before it renders a questionnaire. No secrets. The
     * route is authenticated (docs/identity.md "Authorization": bearer authentication, no scope): 401 without
     * credentials, so a client cannot read it before sign-in.
     */
    app() {
      return {
        version: VERSION,
        api_version: 'v1',
        auth: {
          external_idp_enabled: Boolean(
            deps.config.oidcIssuer && deps.config.oidcAudience && deps.config.oidcJwksUrl,
          ),
          mfa_methods: ['totp'],
        },
        questionnaire: {
          statuses: ['DRAFT', 'PUBLISHED', 'ARCHIVED'],
          transitions: TRANSITIONS,
          revision_operations: ['EDIT', 'METADATA_EDIT', 'PUBLISH', 'FORK', 'DELETE', 'RESTORE', 'ARCHIVE'],
          config_defaults: QUESTIONNAIRE_CONFIG_DEFAULTS,
        },
        permission_levels: [...PERMISSION_LEVELS],
        pagination: { default_limit: 25, max_limit: 250 },
      };
    },

    async forFolder(
      principal: Principal,
      folderId: string,
    ): Promise<EffectiveConfig & { folder_id: string }> {
      const v = await access.viewer(principal);
      if (!(await folderStore.findFolder(store.db, folderId))) {
        throw new AppError('FOLDER.NOT_FOUND', 'Folder not found', { folder_id: folderId });
      }
      await access.requireFolder(v, folderId, 'VIEW');
      return { folder_id: folderId, ...fromChain(await folderStore.folderChain(store.db, folderId)) };
    },

    /**
     * Open endpoint: any signed-in caller gets a PUBLISHED questionnaire (what responders answer, so a
     * zero-scope responder may read it); a caller holding questionnaire:read also gets any other one
     * it may see (permission rules apply). Everything else is 404. The PUBLISHED rule comes first: a
     * provider without a grant on a published questionnaire must not see less than a responder.
     */
    async forQuestionnaire(
      principal: Principal,
      id: string,
    ): Promise<EffectiveConfig & { questionnaire_id: string; folder_id: string | null }> {
      const q = await questionnaireStore.findQuestionnaire(store.db, id);
      const missing = new AppError('QUESTIONNAIRE.NOT_FOUND', 'Questionnaire not found', {
        questionnaire_id: id,
      });
      if (!q) throw missing;
      if (q.status !== 'PUBLISHED') {
        if (!principal.scopes.has('questionnaire:read')) throw missing;
        await access.requireQuestionnaire(await access.viewer(principal), q, 'VIEW');
      }
      const base = fromChain(q.folder_id ? await folderStore.folderChain(store.db, q.folder_id) : []);
      return {
        questionnaire_id: q.id,
        folder_id: q.folder_id,
        config: mergePatch(base.config, q.config),
        sources: [...base.sources, { type: 'questionnaire', id: q.id }],
      };
    },
  };
}
