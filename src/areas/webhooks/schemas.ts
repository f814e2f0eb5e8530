import { type Static, Type } from '@sinclair/typebox';
import { ListQuery, ListResponse, QueryBoolean, Search, TimeRanges } from '../../http/list-schemas.js';
import {
  AuditFields,
  CallRateLimit,
  Description,
  Id,
  JsonObject,
  Nullable,
  patchBody,
  RetentionSeconds,
  retentionSchemas,
  Timestamp,
  Warnings,
} from '../../http/schemas.js';

const Name = Type.String({ minLength: 1, maxLength: 200 });
const Url = Type.String({
  minLength: 1,
  maxLength: 2048,
  description:
    'https:// URL resolving to public addresses only (http:// and private addresses only with SVC_ALLOW_PRIVATE_NETWORKS=true).',
});
/** A CloudEvent type (`svc.user.created`) or `*` for every type. */
const EventType = Type.String({
  minLength: 1,
  maxLength: 200,
  pattern: '^(\\*|[A-Za-z0-9][A-Za-z0-9._:/-]*)$',
});
const EventTypes = Type.Array(EventType, {
  minItems: 1,
  maxItems: 100,
  description: 'CloudEvent types to deliver; `["*"]` subscribes to all.',
});

/** How long this webhook's finished deliveries are kept (docs/reliability.md "Retention"). */
const DeliveryRetention = retentionSchemas({
  deliveries_seconds: RetentionSeconds(
    'deliveries in SUCCESS or FAILED, with their attempts,',
    'SVC_RETENTION_DELIVERIES_SECONDS',
  ),
});

const WebhookFields = {
  id: Type.String(),
  name: Type.String(),
  url: Type.String(),
  event_types: Type.Array(Type.String()),
  description: Nullable(Type.String()),
  enabled: Type.Boolean(),
  secret_hint: Type.String({ description: 'Last 4 characters of the signing secret.' }),
  retention: DeliveryRetention.answer,
  rate_limit: CallRateLimit,
  ...AuditFields,
  warnings: Warnings,
};

/** A webhook as list, get and update answer it: `secret_hint`, never the secret. */
export const Webhook = Type.Object(WebhookFields, { $id: 'Webhook', additionalProperties: false });
export type Webhook = Static<typeof Webhook>;

/** As create and rotate_secret answer it: the only two places the full secret is shown. */
export const WebhookWithSecret = Type.Object(
  {
    ...WebhookFields,
    secret: Type.String({
      description: '64 hex characters, the HMAC-SHA256 signing key. Shown only now: store it.',
    }),
    standard_webhooks_secret: Type.String({
      description:
        'The same key as `whsec_` + base64, the form the Standard Webhooks and Svix libraries take to verify deliveries.',
    }),
  },
  { $id: 'WebhookWithSecret', additionalProperties: false },
);
export type WebhookWithSecret = Static<typeof WebhookWithSecret>;

export const CreateWebhook = Type.Object(
  {
    name: Name,
    url: Url,
    event_types: EventTypes,
    description: Description,
    enabled: Type.Optional(Type.Boolean()),
    retention: DeliveryRetention.body,
    rate_limit: Type.Optional(CallRateLimit),
  },
  {
    examples: [
      {
        name: 'Audit sink',
        url: 'https://hooks.example.com/svc',
        event_types: ['svc.submission.created', 'svc.user.created'],
        description: 'Copies events to the audit system',
      },
    ],
    additionalProperties: false,
  },
);
export type CreateWebhook = Static<typeof CreateWebhook>;

export const UpdateWebhook = patchBody(CreateWebhook, [{ event_types: ['*'] }]);
export type UpdateWebhook = Static<typeof UpdateWebhook>;

export const WEBHOOK_SORTABLE = ['created_at', 'updated_at', 'name', 'url', 'enabled'] as const;
export const WebhookListQuery = ListQuery(WEBHOOK_SORTABLE, {
  enabled: Type.Optional(QueryBoolean),
  name: Type.Optional(Search('name', 2048)),
  url: Type.Optional(Search('url', 2048)),
  search: Type.Optional(Search('name, url and description', 2048)),
});
export const WebhookListResponse = ListResponse('webhooks', Webhook);

const DeliveryStatus = Type.Union([Type.Literal('PENDING'), Type.Literal('SUCCESS'), Type.Literal('FAILED')]);

export const DeliveryAttempt = Type.Object(
  {
    id: Type.String(),
    delivery_id: Type.String(),
    attempt: Type.Integer({
      description: 'The delivery attempt number (restarts at 1 after a manual retry).',
    }),
    sequence: Type.Integer({ description: "1, 2, 3, ... over the delivery's whole life (never restarts)." }),
    outcome: Type.Union([Type.Literal('SUCCESS'), Type.Literal('FAILED'), Type.Literal('INTERRUPTED')]),
    started_at: Timestamp,
    finished_at: Timestamp,
    duration_ms: Nullable(Type.Integer()),
    url: Type.String(),
    http_status: Nullable(Type.Integer()),
    response_body: Nullable(Type.String({ description: 'First 4096 characters of the response body.' })),
    error: Nullable(Type.String()),
    signed_at: Nullable(
      Type.Integer({ description: 'The X-Timestamp / webhook-timestamp sent (Unix seconds).' }),
    ),
  },
  { additionalProperties: false },
);
export type DeliveryAttempt = Static<typeof DeliveryAttempt>;

const DeliveryFields = {
  id: Type.String(),
  webhook_id: Type.String(),
  event_id: Type.String(),
  event_type: Type.String(),
  payload: JsonObject,
  status: DeliveryStatus,
  http_status: Nullable(Type.Integer()),
  response_body: Nullable(Type.String()),
  error: Nullable(Type.String()),
  attempts: Type.Integer(),
  max_attempts: Type.Integer(),
  next_attempt_at: Nullable(Timestamp),
  delivered_at: Nullable(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp,
};

export const Delivery = Type.Object(DeliveryFields, { $id: 'WebhookDelivery', additionalProperties: false });
export type Delivery = Static<typeof Delivery>;

/** One delivery with its attempt log (additive to the spec's fields). */
export const DeliveryDetail = Type.Object(
  {
    ...DeliveryFields,
    attempts_log: Type.Array(DeliveryAttempt, { description: 'Every attempt, oldest first.' }),
  },
  { $id: 'WebhookDeliveryDetail', additionalProperties: false },
);
export type DeliveryDetail = Static<typeof DeliveryDetail>;

export const DELIVERY_SORTABLE = [
  'created_at',
  'updated_at',
  'next_attempt_at',
  'delivered_at',
  'attempts',
  'http_status',
] as const;
const HttpStatus = Type.Integer({ minimum: 100, maximum: 599 });
export const DeliveryListQuery = ListQuery(DELIVERY_SORTABLE, {
  status: Type.Optional(DeliveryStatus),
  event_type: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'exact match' })),
  http_status: Type.Optional(HttpStatus),
  http_status_gte: Type.Optional(HttpStatus),
  http_status_lte: Type.Optional(HttpStatus),
  ...TimeRanges('delivered_at'),
});
export const DeliveryListResponse = ListResponse('deliveries', Delivery);

export const AttemptListQuery = ListQuery(
  ['sequence', 'started_at'] as const,
  {},
  { sortBy: 'sequence', sortDir: 'desc' },
);
export const AttemptListResponse = ListResponse('attempts', DeliveryAttempt);

export const TestWebhookBody = Type.Object(
  {
    event_type: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description:
          "A registered event type; default: the webhook's first type (svc.user.created for a webhook on *)",
      }),
    ),
  },
  { additionalProperties: false, examples: [{ event_type: 'svc.submission.created' }] },
);
export type TestWebhookBody = Static<typeof TestWebhookBody>;

export const WebhookIdParams = Type.Object({ id: Id }, { additionalProperties: false });
export const RecoverBody = Type.Object(
  {
    since: Timestamp,
  },
  {
    additionalProperties: false,
    description: 'Deliveries created at or after this instant (RFC 3339).',
    examples: [{ since: '2026-11-24T00:00:00Z' }],
  },
);
export type RecoverBody = Static<typeof RecoverBody>;

export const Recovered = Type.Object(
  { recovered: Type.Integer({ description: 'FAILED deliveries set to PENDING, due now.' }) },
  { additionalProperties: false },
);

export const DeliveryParams = Type.Object({ id: Id, delivery_id: Id }, { additionalProperties: false });
