import type { Logger } from 'pino';
import { auditInsert, auditUpdate, softDeleted } from '../../db/audit.js';
import type { Store } from '../../db/store.js';
import type { Collection } from '../../http/collection.js';
import { AppError, notFound } from '../../http/errors.js';
import type { ListResult, Page } from '../../http/list.js';
import { type Causation, traceAttributes } from '../../lib/causation.js';
import { type Clock, iso } from '../../lib/clock.js';
import { newId, timeOrderedIds } from '../../lib/ids.js';
import { assertAllowedUrl, ForbiddenTargetError, type GuardOptions } from '../../lib/net-guard.js';
import type { CloudEvent } from '../events/cloudevent.js';
import type { EventTypeService } from '../events/event-types.js';
import type { EventHandler } from '../events/handlers.js';
import type { Pruner } from '../retention/job.js';
import type { VaultService } from '../vault/service.js';
import type { DeliveryFilters } from './delivery-store.js';
import * as deliveries from './delivery-store.js';
import { type DeliveryExportFilter, exportDeliveries } from './export.js';
import { deliveryPass, oldestFinishedDelivery } from './prune.js';
import type {
  CreateWebhook,
  Delivery,
  DeliveryAttempt,
  DeliveryDetail,
  TestWebhookBody,
  UpdateWebhook,
  Webhook,
  WebhookWithSecret,
} from './schemas.js';
import { newSecret, secretHint, standardWebhooksSecret } from './signing.js';
import type { WebhookFilters } from './webhook-store.js';
import * as hooks from './webhook-store.js';

export interface WebhookService
  extends Omit<
    Collection<Webhook, CreateWebhook, UpdateWebhook, WebhookFilters, { message: string }>,
    'create'
  > {
  /** The new webhook with its signing secret, shown this once. */
  create(userId: string, body: CreateWebhook): Promise<WebhookWithSecret>;
  rotateSecret(by: string, id: string): Promise<WebhookWithSecret>;
  listDeliveries(webhookId: string, page: Page, filters: DeliveryFilters): Promise<ListResult<Delivery>>;
  getDelivery(webhookId: string, deliveryId: string): Promise<DeliveryDetail>;
  listAttempts(webhookId: string, deliveryId: string, page: Page): Promise<ListResult<DeliveryAttempt>>;
  retryDelivery(webhookId: string, deliveryId: string): Promise<Delivery>;
  /** Re-queues every FAILED delivery of the webhook created since `since` (Svix's recover). */
  recover(webhookId: string, since: string): Promise<{ recovered: number }>;
  /** Seals signing keys an earlier version stored in plaintext (a start-up task); answers how many. */
  sealPlaintextSecrets(): Promise<number>;
  /** Queues the example event of a registered type to this webhook only (POST /webhook/{id}/test). */
  /** `causation`: the request's, whose trace the test event joins. */
  sendTest(webhookId: string, input: TestWebhookBody, causation?: Causation): Promise<Delivery>;
  /** docs/webhooks.md "Deliveries": the drain's handler creating one delivery per matching webhook. */
  dispatcher: EventHandler;
  /** Enabled webhooks naming this event type (not `*`), described: an event type in use is not deleted. */
  namingType(eventType: string): Promise<string[]>;
  /** Whether an enabled webhook takes events of this type (named, or `*`). */
  wantsType(eventType: string): Promise<boolean>;
  /** Deliveries created in [since, until) with their attempts, oldest first, streamed (`svc export deliveries`). */
  exportDeliveries(filter: DeliveryExportFilter): AsyncIterable<DeliveryDetail>;
  /** Finished deliveries, kept by each webhook's retention or else `defaultSeconds`, for the prune job. */
  pruner(defaultSeconds: number): Pruner;
}

export interface WebhookDeps {
  store: Store;
  clock: Clock;
  log: Logger;
  /** SVC_ALLOW_PRIVATE_NETWORKS and SVC_DNS_SERVERS: checked when a url is set (the sender checks again per attempt). */
  network: GuardOptions;
  /** Wakes the sender (src/areas/webhooks/engine.ts): new deliveries, a manual retry. */
  wake: () => void;
  /** The event type registry: event_types are checked when set; test events are its examples. */
  eventTypes: Pick<EventTypeService, 'checkNamed' | 'examplesOf'>;
  /** The vault: signing keys are stored sealed under its key and re-encrypted when it rotates. */
  vault: Pick<VaultService, 'seal' | 'registerCiphertexts'>;
}

/** The secret as create and rotate_secret answer it: hex, and the `whsec_` form libraries take. */
function withSecret(secret: string): { secret: string; standard_webhooks_secret: string } {
  return { secret, standard_webhooks_secret: standardWebhooksSecret(secret) };
}

/** `warnings` (deprecated event types) only when there are any. */
const warned = (warnings: string[]) => (warnings.length > 0 ? { warnings } : {});

/** Duplicates dropped, order kept; `*` alone stands for every type. */
function normaliseTypes(types: string[]): string[] {
  const unique = [...new Set(types)];
  return unique.includes('*') ? ['*'] : unique;
}

export function createWebhookService(deps: WebhookDeps): WebhookService {
  const { store, clock, log } = deps;
  // Key rotation re-encrypts the signing keys with the vault's entries; a plaintext key left by an
  // earlier version is sealed under the new key on the way.
  deps.vault.registerCiphertexts('webhook signing secret(s)', async (tx, reencrypt) => {
    let count = 0;
    for (const row of await hooks.allSecrets(tx.db)) {
      const label = `webhook ${row.id} (signing secret)`;
      const next = hooks.isSealedSecret(row.secret)
        ? reencrypt(row.secret, label)
        : deps.vault.seal(row.secret);
      if (next !== row.secret) {
        await hooks.setSecret(tx.db, row.id, next);
        count++;
      }
    }
    return count;
  });
  // Newest first must hold within a millisecond too: delivery ids sort like their creation.
  const newDeliveryId = timeOrderedIds(clock);

  async function checkUrl(url: string): Promise<void> {
    try {
      await assertAllowedUrl(url, deps.network);
    } catch (err) {
      if (err instanceof ForbiddenTargetError) {
        throw new AppError('WEBHOOK.URL_FORBIDDEN', `url refused: ${err.message}`, {
          field: 'url',
          reason: err.reason,
        });
      }
      throw err;
    }
  }

  async function activeWebhook(id: string): Promise<hooks.PublicWebhookRow> {
    const row = await hooks.findActiveWebhook(store.db, id);
    if (!row) throw notFound('WEBHOOK.NOT_FOUND', 'Webhook');
    return row;
  }

  async function delivery(webhookId: string, deliveryId: string): Promise<deliveries.DeliveryWithPayload> {
    await activeWebhook(webhookId);
    const row = await deliveries.findDelivery(store.db, webhookId, deliveryId);
    if (!row) throw notFound('WEBHOOK.DELIVERY_NOT_FOUND', 'Webhook delivery');
    return row;
  }

  /** Parsed `event_types` by their stored text: the dispatcher reads them for every event. */
  const typeCache = new Map<string, Set<string>>();
  function typesOf(text: string): Set<string> {
    let set = typeCache.get(text);
    if (!set) {
      if (typeCache.size > 10_000) typeCache.clear();
      set = new Set(JSON.parse(text) as string[]);
      typeCache.set(text, set);
    }
    return set;
  }

  const dispatcher: EventHandler = {
    name: 'webhooks',
    // One lookup and one transaction for the whole batch the drain hands over.
    async handle(events: readonly CloudEvent[]): Promise<void> {
      const subscribed = await hooks.subscribedWebhooks(store.db);
      if (subscribed.length === 0) return;
      const now = iso(clock.now());
      const payloads: { eventId: string; payload: string }[] = [];
      const rows: deliveries.DeliveryRow[] = [];
      for (const event of events) {
        const targets = subscribed.filter((h) => {
          const types = typesOf(h.event_types);
          return types.has('*') || types.has(event.type);
        });
        if (targets.length === 0) continue;
        payloads.push({ eventId: event.id, payload: JSON.stringify(event) });
        for (const h of targets) rows.push(deliveries.deliveryRow(h.id, event, now, newDeliveryId()));
      }
      if (rows.length === 0) return;
      // (webhook_id, event_id) is unique: an event handed over again inserts nothing.
      const inserted = await store.transaction(async (tx) => {
        await deliveries.insertEvents(tx.db, payloads);
        return deliveries.insertDeliveries(tx.db, rows);
      });
      if (inserted > 0) deps.wake();
    },
  };

  return {
    dispatcher,

    exportDeliveries: (filter) => exportDeliveries(store.db, filter),

    pruner: (defaultSeconds) => ({
      kind: 'deliveries',
      async pass(now) {
        const rules = (await hooks.retentionSettings(store.db)).map((w) => ({
          webhookId: w.id,
          seconds: w.retention_deliveries_seconds ?? defaultSeconds,
        }));
        return deliveryPass(store, rules, now);
      },
      oldest: () => oldestFinishedDelivery(store),
    }),

    async create(by, input) {
      await checkUrl(input.url);
      const warnings = await deps.eventTypes.checkNamed(input.event_types, 'event_types', { wildcard: true });
      const now = iso(clock.now());
      const secret = newSecret();
      const row: hooks.WebhookRow = {
        id: newId(),
        name: input.name,
        url: input.url,
        event_types: JSON.stringify(normaliseTypes(input.event_types)),
        description: input.description ?? null,
        enabled: input.enabled === false ? 0 : 1,
        secret: deps.vault.seal(secret),
        secret_hint: secretHint(secret),
        retention_deliveries_seconds: input.retention?.deliveries_seconds ?? null,
        rate_limit: input.rate_limit ? JSON.stringify(input.rate_limit) : null,
        ...auditInsert(now, by),
      };
      await store.transaction((tx) => hooks.insertWebhook(tx.db, row));
      return { ...hooks.toWebhook(row), ...withSecret(secret), ...warned(warnings) };
    },

    async list(page, filters) {
      const result = await hooks.listWebhooks(store.db, page, filters);
      return { items: result.items.map(hooks.toWebhook), total: result.total };
    },

    async get(id) {
      return hooks.toWebhook(await activeWebhook(id));
    },

    async update(by, id, input) {
      await activeWebhook(id);
      if (input.url !== undefined) await checkUrl(input.url);
      const warnings =
        input.event_types === undefined
          ? []
          : await deps.eventTypes.checkNamed(input.event_types, 'event_types', { wildcard: true });
      const changes: Partial<hooks.WebhookRow> = auditUpdate(iso(clock.now()), by);
      if (input.name !== undefined) changes.name = input.name;
      if (input.url !== undefined) changes.url = input.url;
      if (input.event_types !== undefined)
        changes.event_types = JSON.stringify(normaliseTypes(input.event_types));
      if (input.description !== undefined) changes.description = input.description;
      if (input.enabled !== undefined) changes.enabled = input.enabled ? 1 : 0;
      if (input.retention?.deliveries_seconds !== undefined)
        changes.retention_deliveries_seconds = input.retention.deliveries_seconds;
      if (input.rate_limit !== undefined)
        changes.rate_limit = input.rate_limit === null ? null : JSON.stringify(input.rate_limit);
      const updated = await store.transaction((tx) => hooks.updateWebhook(tx.db, id, changes));
      if (!updated) throw notFound('WEBHOOK.NOT_FOUND', 'Webhook');
      return { ...hooks.toWebhook(await activeWebhook(id)), ...warned(warnings) };
    },

    async wantsType(eventType) {
      const subscribed = await hooks.subscribedWebhooks(store.db);
      return subscribed.some((h) => typesOf(h.event_types).has(eventType) || typesOf(h.event_types).has('*'));
    },

    async namingType(eventType) {
      const named = await hooks.subscribedWebhooks(store.db);
      return named.filter((h) => typesOf(h.event_types).has(eventType)).map((h) => `webhook ${h.id}`);
    },

    async remove(by, id) {
      await activeWebhook(id);
      const now = iso(clock.now());
      const removed = await store.transaction((tx) => hooks.updateWebhook(tx.db, id, softDeleted(now, by)));
      if (!removed) throw notFound('WEBHOOK.NOT_FOUND', 'Webhook');
      return { message: 'Webhook deleted; its queued deliveries keep retrying' };
    },

    async rotateSecret(by, id) {
      await activeWebhook(id);
      const secret = newSecret();
      const now = iso(clock.now());
      // The sender reads the secret at every attempt, so the old one signs nothing from now on.
      const updated = await store.transaction((tx) =>
        hooks.updateWebhook(tx.db, id, {
          secret: deps.vault.seal(secret),
          secret_hint: secretHint(secret),
          ...auditUpdate(now, by),
        }),
      );
      if (!updated) throw notFound('WEBHOOK.NOT_FOUND', 'Webhook');
      return { ...hooks.toWebhook(await activeWebhook(id)), ...withSecret(secret) };
    },

    async listDeliveries(webhookId, page, filters) {
      await activeWebhook(webhookId);
      const result = await deliveries.listDeliveries(store.db, webhookId, page, filters);
      return { items: result.items.map(deliveries.toDelivery), total: result.total };
    },

    async getDelivery(webhookId, deliveryId) {
      const row = await delivery(webhookId, deliveryId);
      const attempts = await deliveries.attemptsOf(store.db, row.id);
      return { ...deliveries.toDelivery(row), attempts_log: attempts.map(deliveries.toAttempt) };
    },

    async listAttempts(webhookId, deliveryId, page) {
      const row = await delivery(webhookId, deliveryId);
      const result = await deliveries.listAttempts(store.db, row.id, page);
      return { items: result.items.map(deliveries.toAttempt), total: result.total };
    },

    async retryDelivery(webhookId, deliveryId) {
      const row = await delivery(webhookId, deliveryId);
      // The answer is read inside the transaction: after the commit the woken sender may already
      // have started attempt 1.
      const reset = await store.transaction(async (tx) => {
        await deliveries.resetDelivery(tx.db, row.id, iso(clock.now()));
        tx.afterCommit(deps.wake);
        return deliveries.findDelivery(tx.db, webhookId, deliveryId);
      });
      return deliveries.toDelivery(reset as deliveries.DeliveryWithPayload);
    },

    async recover(webhookId, since) {
      await activeWebhook(webhookId);
      const recovered = await store.transaction(async (tx) => {
        const n = await deliveries.resetFailedSince(tx.db, webhookId, since, iso(clock.now()));
        if (n > 0) tx.afterCommit(deps.wake);
        return n;
      });
      return { recovered };
    },

    async sealPlaintextSecrets() {
      return store.transaction(async (tx) => {
        const plain = (await hooks.allSecrets(tx.db)).filter((r) => !hooks.isSealedSecret(r.secret));
        for (const row of plain) await hooks.setSecret(tx.db, row.id, deps.vault.seal(row.secret));
        if (plain.length > 0)
          log.info({ count: plain.length }, 'webhook signing secrets sealed under the vault key');
        return plain.length;
      });
    },

    async sendTest(webhookId, input, causation) {
      const hook = await activeWebhook(webhookId);
      const types = JSON.parse(hook.event_types) as string[];
      const type = input.event_type ?? types.find((t) => t !== '*') ?? 'svc.user.created';
      const example = (await deps.eventTypes.examplesOf(type))?.[0];
      if (!example) {
        throw new AppError('EVENT.UNKNOWN_TYPE', `Event type "${type}" is not in the event registry`, {
          field: 'event_type',
          event_type: type,
        });
      }
      const now = iso(clock.now());
      // A receiver can tell a test from a real event by the `svctest` extension attribute.
      const event = {
        ...example,
        id: newId(),
        time: now,
        svctest: true,
        ...traceAttributes(causation?.trace),
      } as unknown as CloudEvent;
      const row = deliveries.deliveryRow(hook.id, event, now);
      const created = await store.transaction(async (tx) => {
        await deliveries.insertEvents(tx.db, [{ eventId: event.id, payload: JSON.stringify(event) }]);
        await deliveries.insertDeliveries(tx.db, [row]);
        tx.afterCommit(deps.wake);
        return deliveries.findDelivery(tx.db, hook.id, row.id);
      });
      return deliveries.toDelivery(created as deliveries.DeliveryWithPayload);
    },
  };
}
