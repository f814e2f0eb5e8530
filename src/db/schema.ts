/**
 * The store's table types: one interface per area, merged here so Kysely knows every table.
 * Columns are snake_case like the API. Portable types only: timestamps are ISO-8601 text (fixed
 * width, sorts correctly), JSON is text, booleans are integers 0/1 (better-sqlite3 cannot bind
 * booleans, and one representation keeps every store identical on both dialects).
 */
import type { AuthTables } from '../areas/auth/tables.js';
import type { EnrollmentTables } from '../areas/enrollments/tables.js';
import type { EventTables } from '../areas/events/tables.js';
import type { IdentityTables } from '../areas/identity/tables.js';
import type { PluginTables } from '../areas/plugins/tables.js';
import type { QuestionnaireTables } from '../areas/questionnaires/tables.js';
import type { RetentionTables } from '../areas/retention/tables.js';
import type { ScheduleTables } from '../areas/schedules/tables.js';
import type { SubmissionTables } from '../areas/submissions/tables.js';
import type { SubscriptionTables } from '../areas/subscriptions/tables.js';
import type { VaultTables } from '../areas/vault/tables.js';
import type { WebhookTables } from '../areas/webhooks/tables.js';
import type { WorkflowTables } from '../areas/workflows/tables.js';
import type { CallLimitTables } from './call-limits.js';

export interface Database
  extends AuthTables,
    EventTables,
    IdentityTables,
    VaultTables,
    QuestionnaireTables,
    WebhookTables,
    EnrollmentTables,
    SubmissionTables,
    PluginTables,
    SubscriptionTables,
    ScheduleTables,
    RetentionTables,
    WorkflowTables,
    CallLimitTables {}
