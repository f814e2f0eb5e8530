import type { App } from '../../http/app.js';
import type { QuestionnaireArea } from './area.js';
import { registerConfigRoutes } from './config-routes.js';
import { registerFolderRoutes } from './folder-routes.js';
import { registerPermissionRoutes } from './permission-routes.js';
import { registerCatalogueRoutes } from './questionnaire-routes.js';

/** The catalogue's services its routes call (services.questionnaires, .folders, .permissions, .platformConfig). */
export type QuestionnaireRouteDeps = Pick<
  QuestionnaireArea,
  'questionnaires' | 'folders' | 'permissions' | 'platformConfig'
>;

/** Questionnaires and their revisions, folders, permissions, config (docs/platform.md). */
export function registerQuestionnaireRoutes(api: App, deps: QuestionnaireRouteDeps): void {
  registerCatalogueRoutes(api, deps);
  registerFolderRoutes(api, deps);
  registerPermissionRoutes(api, deps);
  registerConfigRoutes(api, deps);
}
