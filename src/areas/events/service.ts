import type { Store } from '../../db/store.js';
import { AppError } from '../../http/errors.js';
import type { ListResult, Page } from '../../http/list.js';
import { type Clock, iso } from '../../lib/clock.js';
import type { EventDefinition } from './definitions.js';
import type { EventPublisher } from './publish.js';
import type { EventRegistry } from './registry.js';
import type { EventDefinitionQuery, EventDeliveryTask, EventDeliveryTaskQuery } from './schemas.js';
import { findTask, listTasks, retryFailed, toTask } from './store.js';

type DefinitionFilters = Omit<EventDefinitionQuery, keyof Page>;
type TaskFilters = Omit<EventDeliveryTaskQuery, keyof Page>;

/** The events area as other areas and the routes see it: publish, the two lists, retrying a task. */
export interface EventsService extends EventPublisher {
  readonly registry: EventRegistry;
  listDefinitions(page: Page, filters: DefinitionFilters): ListResult<EventDefinition>;
  listTasks(page: Page, filters: TaskFilters): Promise<ListResult<EventDeliveryTask>>;
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
    listDefinitions: (page, filters) => definitionPage(deps.registry, page, filters),
    listTasks: (page, filters) => listTasks(deps.store.db, { ...page, ...filters }),
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
function definitionPage(
  registry: EventRegistry,
  page: Page,
  query: DefinitionFilters,
): ListResult<EventDefinition> {
  const needle = query.search?.toLowerCase();
  const matching = registry.definitions.filter(
    (d) =>
      (query.event_type === undefined || d.event_type === query.event_type) &&
      (query.deprecated === undefined || d.deprecated === query.deprecated) &&
      (needle === undefined ||
        d.event_type.toLowerCase().includes(needle) ||
        d.description.toLowerCase().includes(needle)),
  );
  const key = page.sort_by as 'event_type' | 'schema_version' | 'deprecated';
  const sign = page.sort_dir === 'asc' ? 1 : -1;
  const sorted = [...matching].sort(
    (a, b) => sign * (compare(a[key], b[key]) || a.event_type.localeCompare(b.event_type)),
  );
  const items = sorted.slice(page.offset, page.offset + page.limit);
  return { items, total: matching.length };
}

function compare(a: string | boolean, b: string | boolean): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
