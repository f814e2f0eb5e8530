import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { Store } from '../db/store.js';
import type { Access, Principal } from '../http/access.js';
import type { Clock } from '../lib/clock.js';
import type { Services } from './services.js';

/** The Fastify instance every area registers its routes on (TypeBox types the handlers). */
export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/** Everything the process shares: built once by the CLI (or a test), passed explicitly. */
export interface AppContext {
  config: Config;
  store: Store;
  clock: Clock;
  log: Logger;
  services: Services;
}

/** A route as the access matrix sees it. */
export interface RouteEntry {
  method: string;
  url: string;
  access: Access;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: Access;
  }
  interface FastifyRequest {
    /** Set by the auth hook on every non-public route. */
    principal: Principal;
  }
}
