import type { ValidateFunction } from 'ajv';
import { auditInsert, auditUpdate } from '../../db/audit.js';
import { isUniqueViolation } from '../../db/errors.js';
import type { Db, Store } from '../../db/store.js';
import { AppError } from '../../http/errors.js';
import type { ListResult, Page } from '../../http/list.js';
import { type Clock, iso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { closestNames } from '../../lib/suggest.js';
import type { EventRegistry } from './registry.js';
import type { CreateEventDefinition, EventDefinitionQuery, UpdateEventDefinition } from './schemas.js';
import type { EventTypeDefinitionTable } from './tables.js';
import {
  builtin,
  checkExamples,
  checkSchema,
  compare,
  describeErrors,
  type EventDefinition,
  newAjv,
  toDefinition,
} from './type-rules.js';

export type { EventDefinition };

import * as st from './type-store.js';

type DefinitionFilters = Omit<EventDefinitionQuery, keyof Page>;

/** svc's own namespace: only svc publishes these, and no user type may take a name in it. */
export const RESERVED_PREFIX = 'svc.';
export const isReserved = (type: string) => type.toLowerCase().startsWith(RESERVED_PREFIX);

/**
 * The event type registry as users see it (docs/events.md "Custom event types"): svc's built-in
 * types (code) and the types users register (the store), one list. Areas that name types
 * (subscriptions, webhooks) check them here; POST /event checks an event's data here.
 */
export interface EventTypeService {
  list(page: Page, filters: DefinitionFilters): Promise<ListResult<EventDefinition>>;
  /** A registered type (built-in or custom); 404 EVENT_DEFINITION.NOT_FOUND otherwise. */
  get(eventType: string): Promise<EventDefinition>;
  create(userId: string, body: CreateEventDefinition): Promise<EventDefinition>;
  update(userId: string, eventType: string, body: UpdateEventDefinition): Promise<EventDefinition>;
  /** Soft delete; 409 EVENT_DEFINITION.IN_USE while enabled subscriptions or webhooks name it, unless forced. */
  remove(userId: string, eventType: string, force: boolean): Promise<{ status: 'deleted' }>;
  /**
   * For the areas that name types: 400 EVENT.UNKNOWN_TYPE (with the closest registered types) for a
   * type not registered; answers a warning per deprecated type. `*` passes when `wildcard` allows it.
   */
  checkNamed(types: readonly string[], field: string, opts?: { wildcard?: boolean }): Promise<string[]>;
  /**
   * The check of an event a user publishes (POST /event): its type is a registered custom type and
   * its data matches the type's data_schema; 400 EVENT.RESERVED_TYPE / EVENT.UNKNOWN_TYPE /
   * EVENT.INVALID otherwise. Cached: a change made in another process is seen within seconds.
   */
  checkPublished(event: { type: string; data?: unknown; data_base64?: unknown }): Promise<void>;
  /**
   * The data check of an event svc makes itself of any registered type (a CALL's child trigger):
   * 400 EVENT.UNKNOWN_TYPE for a type not registered, EVENT.INVALID when `data` breaks its data_schema.
   */
  checkData(eventType: string, data: unknown): Promise<void>;
  /** Example events of a registered type (webhook tests), or undefined. */
  examplesOf(eventType: string): Promise<Record<string, unknown>[] | undefined>;
  /** The data schema of a registered type (the graph editor's paths), or undefined. */
  dataSchemaOf(eventType: string): Promise<unknown>;
}

export interface EventTypeDeps {
  store: Store;
  clock: Clock;
  registry: EventRegistry;
  /** Enabled subscriptions and webhooks naming a type, described ("subscription <id> (<name>)"). */
  usersOf(eventType: string): Promise<string[]>;
}

/** How long a process trusts its cached custom types before reading them again. */
const CACHE_MS = 5_000;
/** A type missing from the cache is looked up again at most this often (a producer's typo must not hammer the store). */
const MISS_RELOAD_MS = 1_000;

interface Custom {
  row: EventTypeDefinitionTable;
  definition: EventDefinition;
}

export function createEventTypeService(deps: EventTypeDeps): EventTypeService {
  const { store, clock, registry } = deps;
  const now = () => iso(clock.now());
  let cache: { at: number; byType: Map<string, Custom> } | undefined;
  let lastMissReload = 0;
  /** Compiled data schemas, by definition id and version: kept across cache reloads. */
  const validators = new Map<string, ValidateFunction>();

  const notFound = (eventType: string) =>
    new AppError('EVENT_DEFINITION.NOT_FOUND', `Event type "${eventType}" is not registered`, {
      event_type: eventType,
    });

  async function loadCustoms(): Promise<Map<string, Custom>> {
    const rows = await st.activeDefinitions(store.db);
    const byType = new Map(rows.map((row) => [row.event_type, { row, definition: toDefinition(row) }]));
    cache = { at: Date.now(), byType };
    return byType;
  }

  async function cachedCustom(eventType: string): Promise<Custom | undefined> {
    const fresh = cache && Date.now() - cache.at < CACHE_MS ? cache.byType : await loadCustoms();
    const hit = fresh.get(eventType);
    if (hit || Date.now() - lastMissReload < MISS_RELOAD_MS) return hit;
    lastMissReload = Date.now();
    return (await loadCustoms()).get(eventType);
  }

  function validatorOf(custom: Custom): ValidateFunction | undefined {
    if (custom.row.data_schema === null) return undefined;
    const key = `${custom.row.id}:${custom.row.schema_version}`;
    let v = validators.get(key);
    if (!v) {
      // One Ajv per schema: users' $ids never collide across definitions or versions.
      v = newAjv().compile(JSON.parse(custom.row.data_schema) as object);
      validators.set(key, v);
    }
    return v;
  }

  /** Every registered type, built-in and custom, read fresh (writes and the list are rare). */
  async function allDefinitions(): Promise<EventDefinition[]> {
    const customs = (await loadCustoms()).values();
    return [...registry.definitions.map(builtin), ...[...customs].map((c) => c.definition)];
  }

  async function registered(eventType: string): Promise<EventDefinition | undefined> {
    const b = registry.get(eventType);
    if (b) return builtin(b);
    const row = await st.findActive(store.db, eventType);
    return row ? toDefinition(row) : undefined;
  }

  async function activeCustom(db: Db, eventType: string): Promise<EventTypeDefinitionTable> {
    if (registry.get(eventType)) {
      throw new AppError(
        'EVENT_DEFINITION.BUILTIN',
        `"${eventType}" is one of svc's own types; it cannot change`,
        {
          event_type: eventType,
        },
      );
    }
    const row = await st.findActive(db, eventType);
    if (!row) throw notFound(eventType);
    return row;
  }

  return {
    async list(page, filters) {
      const needle = filters.search?.toLowerCase();
      const matching = (await allDefinitions()).filter(
        (d) =>
          (filters.event_type === undefined || d.event_type === filters.event_type) &&
          (filters.deprecated === undefined || d.deprecated === filters.deprecated) &&
          (filters.builtin === undefined || d.builtin === filters.builtin) &&
          (needle === undefined ||
            d.event_type.toLowerCase().includes(needle) ||
            d.description.toLowerCase().includes(needle)),
      );
      const key = page.sort_by as 'event_type' | 'schema_version' | 'deprecated';
      const sign = page.sort_dir === 'asc' ? 1 : -1;
      const sorted = matching.sort(
        (a, b) => sign * (compare(a[key], b[key]) || a.event_type.localeCompare(b.event_type)),
      );
      return { items: sorted.slice(page.offset, page.offset + page.limit), total: matching.length };
    },

    async get(eventType) {
      const d = await registered(eventType);
      if (!d) throw notFound(eventType);
      return d;
    },

    async create(userId, body) {
      const type = body.event_type;
      if (isReserved(type)) {
        throw new AppError(
          'EVENT.RESERVED_TYPE',
          `The "${RESERVED_PREFIX}" namespace is reserved for svc's own events`,
          {
            field: 'event_type',
            event_type: type,
          },
        );
      }
      const schema = body.data_schema ?? null;
      checkExamples(type, checkSchema(schema), body.examples ?? []);
      const at = now();
      const row: EventTypeDefinitionTable = {
        id: newId(),
        event_type: type,
        description: body.description ?? '',
        data_schema: schema === null ? null : JSON.stringify(schema),
        examples: JSON.stringify(body.examples ?? []),
        schema_version: '1.0',
        deprecated: body.deprecated ? 1 : 0,
        ...auditInsert(at, userId),
      };
      try {
        await store.transaction(async (tx) => {
          if (await st.findActive(tx.db, type)) throw taken(type);
          await st.insertDefinition(tx.db, row);
        });
      } catch (err) {
        // Two registrations racing: the unique index decides.
        if (isUniqueViolation(err)) throw taken(type);
        throw err;
      }
      cache = undefined;
      return toDefinition(row);
    },

    async update(userId, eventType, body) {
      const row = await store.transaction(async (tx) => {
        const current = await activeCustom(tx.db, eventType);
        const currentSchema =
          current.data_schema === null ? null : (JSON.parse(current.data_schema) as object);
        const schema = body.data_schema === undefined ? currentSchema : body.data_schema;
        const schemaChanged =
          body.data_schema !== undefined && JSON.stringify(body.data_schema) !== current.data_schema;
        const examples = body.examples ?? (JSON.parse(current.examples) as Record<string, unknown>[]);
        // A new schema must compile and still accept the examples (the stored ones, or new ones).
        if (schemaChanged || body.examples !== undefined)
          checkExamples(eventType, checkSchema(schema), examples);
        const patch: st.DefinitionPatch = auditUpdate(now(), userId);
        if (body.description !== undefined) patch.description = body.description;
        if (body.deprecated !== undefined) patch.deprecated = body.deprecated ? 1 : 0;
        if (body.examples !== undefined) patch.examples = JSON.stringify(body.examples);
        if (schemaChanged) {
          patch.data_schema = schema === null ? null : JSON.stringify(schema);
          patch.schema_version = `${Number.parseInt(current.schema_version, 10) + 1}.0`;
        }
        if (!(await st.updateDefinition(tx.db, current.id, patch))) throw notFound(eventType);
        return (await st.findActive(tx.db, eventType))!;
      });
      cache = undefined;
      return toDefinition(row);
    },

    async remove(userId, eventType, force) {
      const current = await activeCustom(store.db, eventType);
      if (!force) {
        const users = await deps.usersOf(eventType);
        if (users.length > 0) {
          throw new AppError(
            'EVENT_DEFINITION.IN_USE',
            `Event type "${eventType}" is named by ${users.length} enabled subscription(s) or webhook(s); ` +
              'disable or change them, or delete with ?force=true',
            { event_type: eventType, used_by: users },
          );
        }
      }
      if (!(await st.softDeleteDefinition(store.db, current.id, now(), userId))) throw notFound(eventType);
      cache = undefined;
      return { status: 'deleted' };
    },

    async checkNamed(types, field, opts = {}) {
      const warnings: string[] = [];
      const unknown: string[] = [];
      for (const type of types) {
        if (type === '*' && opts.wildcard) continue;
        const d = await registered(type);
        if (!d) unknown.push(type);
        else if (d.deprecated) warnings.push(`event type "${type}" is deprecated`);
      }
      if (unknown.length > 0) {
        const names = (await allDefinitions()).map((d) => d.event_type);
        const [first] = unknown;
        const suggestions = closestNames(first, names);
        throw new AppError(
          'EVENT.UNKNOWN_TYPE',
          `${field}: event type "${first}" is not registered` +
            (suggestions.length > 0
              ? ` (did you mean ${suggestions.map((s) => `"${s}"`).join(' or ')}?)`
              : '') +
            '; GET /event_definition lists the types, POST /event_definition registers one',
          { field, event_type: first, unknown, suggestions },
        );
      }
      return warnings;
    },

    async checkPublished(event) {
      if (isReserved(event.type)) {
        throw new AppError(
          'EVENT.RESERVED_TYPE',
          `Events of the "${RESERVED_PREFIX}" namespace are published by svc only`,
          {
            event_type: event.type,
          },
        );
      }
      const custom = await cachedCustom(event.type);
      if (!custom) {
        const suggestions = closestNames(event.type, [...(cache?.byType.keys() ?? [])]);
        throw new AppError(
          'EVENT.UNKNOWN_TYPE',
          `Event type "${event.type}" is not registered` +
            (suggestions.length > 0
              ? ` (did you mean ${suggestions.map((s) => `"${s}"`).join(' or ')}?)`
              : '') +
            '; register it with POST /event_definition',
          { event_type: event.type, suggestions },
        );
      }
      const validate = validatorOf(custom);
      if (!validate) return;
      if (event.data_base64 !== undefined && event.data_base64 !== null) {
        throw new AppError(
          'EVENT.INVALID',
          `Events of ${event.type} carry JSON data matching its data_schema, not data_base64`,
          {
            event_type: event.type,
            field: 'data_base64',
          },
        );
      }
      if (!validate(event.data ?? null)) {
        throw new AppError('EVENT.INVALID', `Event data of ${event.type} does not match its data_schema`, {
          event_type: event.type,
          errors: describeErrors(validate.errors ?? []),
        });
      }
    },

    async checkData(eventType, data) {
      const invalidData = (errors: Array<{ path: string; message: string }>) =>
        new AppError(
          'EVENT.INVALID',
          `Event data of ${eventType} does not match its data_schema: ${errors
            .slice(0, 3)
            .map((e) => `${e.path} ${e.message}`)
            .join('; ')}`,
          { event_type: eventType, errors },
        );
      if (registry.get(eventType)) {
        const errors = registry.dataErrors(eventType, data ?? null);
        if (errors.length > 0) throw invalidData(errors);
        return;
      }
      const custom = await cachedCustom(eventType);
      if (!custom)
        throw new AppError('EVENT.UNKNOWN_TYPE', `Event type "${eventType}" is not registered`, {
          event_type: eventType,
        });
      const validate = validatorOf(custom);
      if (validate && !validate(data ?? null)) throw invalidData(describeErrors(validate.errors ?? []));
    },

    async examplesOf(eventType) {
      return (await registered(eventType))?.examples;
    },

    async dataSchemaOf(eventType) {
      return (await registered(eventType))?.data_schema ?? undefined;
    },
  };
}

const taken = (type: string) =>
  new AppError('EVENT_DEFINITION.EXISTS', `Event type "${type}" is already registered`, { event_type: type });
