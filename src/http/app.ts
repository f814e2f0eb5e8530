import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { Access, Principal } from './access.js';

/**
 * The Fastify instance every area registers its routes on (TypeBox types the handlers). Areas take it
 * from here, never from src/app: the composition root imports areas, not the reverse.
 */
export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/** A route as the access matrix sees it. */
export interface RouteEntry {
  method: string;
  url: string;
  access: Access;
  /** As declared; Fastify compiles its parts on first use (src/app/validation.ts). */
  schema: Record<string, unknown>;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: Access;
  }
  interface FastifyRequest {
    /** Set by the auth hook on every non-public route. */
    principal: Principal;
    /** The request's server span (null when tracing is off or the path is not traced). */
    span: import('../lib/tracing.js').Span | null;
  }
}
