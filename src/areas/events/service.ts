import type { Store } from '../../db/store.js';
import { AppError } from '../../http/errors.js';
import { envelope } from '../../http/list.js';
import { type Clock, iso } from '../../lib/clock.js';
import type { EventDefinition } from './definitions.js';
import type { EventPublisher } from './publish.js';
import type { EventRegistry } from './registry.js';
import type { EventDefinitionQuery, EventDeliveryTask, EventDeliveryTaskQuery } from './schemas.js';
import { findTask, listTasks, retryFailed, toTask } from './store.js';

/** The events area as other areas and the routes see it: publish, the two lists, retrying a task. */
export interface EventsService extends EventPublisher {
  readonly registry: EventRegistry;
  listDefinitions(
    query: EventDefinitionQuery,
  ): ReturnType<typeof envelope<'event_definitions', EventDefinition>>;
  listTasks(query: EventDeliveryTaskQuery): Promise<ReturnType<typeof envelope<'tasks', EventDeliveryTask>>>;
  /** A FAILED task back to PENDING, due now, its counts reset; the drain is woken. */
  retryTask(id: string): Promise<EventDeliveryTask>;
}

export function createEventsService(deps: {
  store: Store;
  clock: Clock;
  registry: EventRegistry;
  publisher: EventPublisher;
  /** Wakes the outbox drain (here and, on PostgreSQL, in every process). */
  wake: () => void;
}): EventsService {
  return {
    publish: deps.publisher.publish,
    registry: deps.registry,
    listDefinitions: (query) => definitionPage(deps.registry, query),
    async listTasks(query) {
      return envelope('tasks', await listTasks(deps.store.db, query), query);
    },
    async retryTask(id) {
      const task = await deps.store.transaction(async (tx) => {
        const current = await findTask(tx.db, id);
        if (!current) throw new AppError('EVENT.TASK_NOT_FOUND', 'Outbox task not found', { task_id: id });
        if (!(await retryFailed(tx.db, id, iso(deps.clock.now())))) {
          throw new AppError(
            'EVENT.TASK_NOT_FAILED',
            `Only FAILED tasks can be retried; this one is ${current.status}`,
            {
              task_id: id,
              status: current.status,
            },
          );
        }
        tx.afterCommit(deps.wake);
        return (await findTask(tx.db, id))!;
      });
      return toTask(task);
    },
  };
}

/** The registry lives in code, not the store, so its list is filtered, sorted and paged here. */
function definitionPage(registry: EventRegistry, query: EventDefinitionQuery) {
  const needle = query.search?.toLowerCase();
  const matching = registry.definitions.filter(
    (d) =>
      (query.event_type === undefined || d.event_type === query.event_type) &&
      (query.deprecated === undefined || d.deprecated === query.deprecated) &&
      (needle === undefined ||
        d.event_type.toLowerCase().includes(needle) ||
        d.description.toLowerCase().includes(needle)),
  );
  const key = query.sort_by as 'event_type' | 'schema_version' | 'deprecated';
  const sign = query.sort_dir === 'asc' ? 1 : -1;
  const sorted = [...matching].sort(
    (a, b) => sign * (compare(a[key], b[key]) || a.event_type.localeCompare(b.event_type)),
  );
  const items = sorted.slice(query.offset, query.offset + query.limit);
  return envelope('event_definitions', { items, total: matching.length }, query);
}

function compare(a: string | boolean, b: string | boolean): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
