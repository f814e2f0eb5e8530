import type { Logger } from 'pino';
import type { Config } from '../../config/config.js';
import type { Store } from '../../db/store.js';
import type { Clock } from '../../lib/clock.js';
import type { EventPublisher } from '../events/publish.js';
import { createAccess, type RoleLookup } from './access.js';
import { type ConfigService, createConfigService } from './config-service.js';
import { createFolderService, type FolderService } from './folder-service.js';
import { createPermissionService, type GranteeLookup, type PermissionService } from './permission-service.js';
import { createQuestionnaireService, type QuestionnaireService } from './service.js';

export interface QuestionnaireAreaDeps {
  config: Config;
  store: Store;
  clock: Clock;
  log: Logger;
  events: EventPublisher;
  /** Identity's role and user lookups (services.identity satisfies this). */
  identity: RoleLookup & GranteeLookup;
}

/** The questionnaire catalogue's services over one store and one set of access rules. */
export interface QuestionnaireArea {
  questionnaires: QuestionnaireService;
  folders: FolderService;
  permissions: PermissionService;
  platformConfig: ConfigService;
}

export function createQuestionnaireArea(deps: QuestionnaireAreaDeps): QuestionnaireArea {
  const access = createAccess({ store: deps.store, identity: deps.identity });
  const common = { store: deps.store, clock: deps.clock, access };
  return {
    questionnaires: createQuestionnaireService({ ...common, events: deps.events }),
    folders: createFolderService({ ...common, events: deps.events }),
    permissions: createPermissionService({ ...common, identity: deps.identity }),
    platformConfig: createConfigService({ config: deps.config, store: deps.store, access }),
  };
}
