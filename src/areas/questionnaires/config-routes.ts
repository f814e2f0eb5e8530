import { anyScope, authenticated } from '../../http/access.js';
import type { App } from '../../http/app.js';
import type { QuestionnaireRouteDeps } from './routes.js';
import { AppConfig, EffectiveFolderConfig, EffectiveQuestionnaireConfig, Params } from './schemas.js';

/** Public app config and effective questionnaire and folder config (docs/platform.md "Config"). */
export function registerConfigRoutes(api: App, deps: QuestionnaireRouteDeps): void {
  const { platformConfig } = deps;

  // ---- config
  const configTags = ['config'];
  api.get(
    '/config',
    {
      schema: {
        operationId: 'getConfig',
        summary: "The platform's default questionnaire configuration",
        tags: configTags,
        description: 'Public app config (no secrets).',
        response: { 200: AppConfig },
      },
      config: authenticated(),
    },
    async () => platformConfig.app(),
  );
  api.get(
    '/config/questionnaire/:id',
    {
      schema: {
        operationId: 'getQuestionnaireConfig',
        summary: "A questionnaire's effective configuration",
        tags: configTags,
        description:
          'Effective config: defaults, then each folder from the root down, then the questionnaire (JSON Merge Patch). Callers without questionnaire:read see PUBLISHED questionnaires only.',
        params: Params,
        response: { 200: EffectiveQuestionnaireConfig },
      },
      config: authenticated(),
    },
    async (req) => platformConfig.forQuestionnaire(req.principal, req.params.id),
  );
  api.get(
    '/config/folder/:id',
    {
      schema: {
        operationId: 'getFolderConfig',
        summary: "A folder's effective configuration",
        tags: configTags,
        description:
          'Effective config of a folder: defaults, then each folder from the root down to this one.',
        params: Params,
        response: { 200: EffectiveFolderConfig },
      },
      config: anyScope('config:read'),
    },
    async (req) => platformConfig.forFolder(req.principal, req.params.id),
  );
}
