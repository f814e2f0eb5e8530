import type { Store } from '../../db/store.js';
import { envelope } from '../../http/list.js';
import type { EventDefinition } from './definitions.js';
import type { EventPublisher } from './publish.js';
import type { EventRegistry } from './registry.js';
import type { EventDefinitionQuery, EventDeliveryTask, EventDeliveryTaskQuery } from './schemas.js';
import { listTasks } from './store.js';

/** The events area as other areas and the routes see it: publish, plus the two read-only lists. */
export interface EventsService extends EventPublisher {
  readonly registry: EventRegistry;
  listDefinitions(
    query: EventDefinitionQuery,
  ): ReturnType<typeof envelope<'event_definitions', EventDefinition>>;
  listTasks(query: EventDeliveryTaskQuery): Promise<ReturnType<typeof envelope<'tasks', EventDeliveryTask>>>;
}

export function createEventsService(deps: {
  store: Store;
  registry: EventRegistry;
  publisher: EventPublisher;
}): EventsService {
  return {
    publish: deps.publisher.publish,
    registry: deps.registry,
    listDefinitions: (query) => definitionPage(deps.registry, query),
    async listTasks(query) {
      return envelope('tasks', await listTasks(deps.store.db, query), query);
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
