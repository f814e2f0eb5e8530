import { type TObject, type TProperties, type TSchema, Type } from '@sinclair/typebox';

/**
 * The shapes every area's records share (ids, timestamps, audit fields, errors). The list query
 * language (paging, sorting, filters) is in list-schemas.ts.
 */

/** The error body of docs/errors.md "Errors", for every error. */
export const ErrorBody = Type.Object(
  {
    code: Type.String(),
    message: Type.String(),
    details: Type.Optional(Type.Object({}, { additionalProperties: true })),
  },
  { $id: 'ErrorBody', additionalProperties: false },
);

/** A route's error answers beyond the ones every route gets (400/401/403/404): `errorAnswers(409, 422)`. */
export const errorAnswers = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((s) => [s, Type.Ref('ErrorBody')])) as Record<
    number,
    ReturnType<typeof Type.Ref>
  >;

export const Id = Type.String({ minLength: 1, maxLength: 200 });
export const Timestamp = Type.String({ format: 'date-time' });

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
/** A record's free-text description in a create or update body: optional, null clears it. */
export const Description = Type.Optional(Nullable(Type.String({ maxLength: 2000 })));

/**
 * A PATCH body derived from its create body, so a field is declared once: every field optional,
 * at least one given, nothing else accepted. `fixed` names the create fields that never change
 * (a role's key, a plugin instance's definition).
 */
export const patchBody = <T extends TProperties, K extends keyof T & string = never>(
  create: TObject<T>,
  examples: unknown[],
  fixed: readonly K[] = [],
) =>
  Type.Object(Type.Partial(Type.Omit(create, [...fixed])).properties, {
    examples,
    additionalProperties: false,
    minProperties: 1,
  });

/**
 * A retention override in seconds (docs/reliability.md "Retention"): how long finished records are
 * kept after they finish; 0 keeps them for ever; null falls back to the server's default.
 */
export const RetentionSeconds = (what: string, serverDefault: string) =>
  Nullable(
    Type.Integer({
      minimum: 0,
      maximum: 315_360_000,
      description: `Seconds ${what} are kept after they finish; 0: for ever; null: the server's ${serverDefault}.`,
    }),
  );

/**
 * A record's `retention` object: every field is in the answer (null for the server default); a
 * create or PATCH body may give any of them, and a PATCH changes only those it gives.
 */
export const retentionSchemas = <T extends Record<string, TSchema>>(fields: T) => ({
  answer: Type.Object(fields, { additionalProperties: false }),
  body: Type.Optional(Type.Partial(Type.Object(fields), { additionalProperties: false })),
});

/**
 * An outbound call rate limit (a plugin instance's, a webhook's): at most `limit` calls start in any
 * `period_ms` (a sliding window); the rest wait their turn (src/db/call-limits.ts). Null: none.
 */
export const CallRateLimit = Nullable(
  Type.Object(
    {
      limit: Type.Integer({ minimum: 1, maximum: 100_000 }),
      period_ms: Type.Integer({
        minimum: 1,
        maximum: 86_400_000,
        description: 'Milliseconds, at most one day.',
      }),
    },
    {
      additionalProperties: false,
      description:
        'At most `limit` calls start in any `period_ms` (a sliding window); the others wait their turn.',
    },
  ),
);

/** Any JSON object (free-form payloads, configs). */
export const JsonObject = Type.Object({}, { additionalProperties: true });

/** What a soft delete answers (subscriptions, event types, schedules). */
export const DeletedBody = Type.Object({ status: Type.Literal('deleted') }, { additionalProperties: false });

/** What a write answers beside the record when something deserves attention (a deprecated event type). */
export const Warnings = Type.Optional(
  Type.Array(Type.String(), {
    description: 'Present when the write succeeded with something to know, e.g. a deprecated event type.',
  }),
);
export const IdParams = Type.Object({ id: Id }, { additionalProperties: false });
export const MessageBody = Type.Object({ message: Type.String() }, { additionalProperties: false });

/** Audit fields carried by most records (docs/architecture.md "An area"). */
export const AuditFields = {
  created_at: Timestamp,
  updated_at: Timestamp,
  updated_by: Nullable(Type.String()),
  deleted_at: Nullable(Timestamp),
};
