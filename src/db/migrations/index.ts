import type { Migration } from 'kysely';
import * as m0001 from './0001_events.js';
import * as m0002 from './0002_identity.js';
import * as m0003 from './0003_auth.js';
import * as m0004 from './0004_vault.js';
import * as m0005 from './0005_plugins.js';
import * as m0006 from './0006_workflows.js';
import * as m0007 from './0007_webhooks.js';
import * as m0008 from './0008_questionnaires.js';
import * as m0009 from './0009_enrollments.js';
import * as m0010 from './0010_events_interruptions.js';
import * as m0011 from './0011_auth_user.js';
import * as m0012 from './0012_workflows_rate_guard.js';
import * as m0013 from './0013_events_custom_types.js';
import * as m0014 from './0014_schedules.js';
import * as m0015 from './0015_workflows_run_control.js';
import * as m0016 from './0016_workflows_causation_depth.js';
import * as m0017 from './0017_retention.js';
import * as m0018 from './0018_partial_indexes.js';
import * as m0019 from './0019_flow_control.js';
import * as m0020 from './0020_workflows_failure_edges.js';
import * as m0021 from './0021_workflows_event_waits.js';
import * as m0022 from './0022_workflows_children.js';
import * as m0023 from './0023_call_limits.js';
import * as m0024 from './0024_workflows_wait_kind.js';

/**
 * Every migration, in order. One set serves SQLite and PostgreSQL; a dialect branch is allowed only
 * where portable SQL cannot do the job, with a comment saying why.
 * Numbers are reserved per area: 0001 events, 0002 identity, 0003 auth, 0004 vault, 0005 plugins,
 * 0006 workflows, 0007 webhooks, 0008 platform (0008_questionnaires: folders, questionnaires, revisions,
 * permissions; 0009_enrollments: enrollments and submissions). Later changes take the next free number,
 * named after their area (0010_events_interruptions), or after the capability when it spans areas
 * (0017_retention).
 */
export const migrations: Record<string, Migration> = {
  '0001_events': m0001,
  '0002_identity': m0002,
  '0003_auth': m0003,
  '0004_vault': m0004,
  '0005_plugins': m0005,
  '0006_workflows': m0006,
  '0007_webhooks': m0007,
  '0008_questionnaires': m0008,
  '0009_enrollments': m0009,
  '0010_events_interruptions': m0010,
  '0011_auth_user': m0011,
  '0012_workflows_rate_guard': m0012,
  '0013_events_custom_types': m0013,
  '0014_schedules': m0014,
  '0015_workflows_run_control': m0015,
  '0016_workflows_causation_depth': m0016,
  '0017_retention': m0017,
  '0018_partial_indexes': m0018,
  '0019_flow_control': m0019,
  '0020_workflows_failure_edges': m0020,
  '0021_workflows_event_waits': m0021,
  '0022_workflows_children': m0022,
  '0023_call_limits': m0023,
  '0024_workflows_wait_kind': m0024,
};
