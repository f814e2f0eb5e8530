import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { Store } from '../db/store.js';
import type { Clock } from '../lib/clock.js';
import type { Tracer } from '../lib/tracing.js';
import type { Services } from './services.js';

/** Everything the process shares: built once by the CLI (or a test), passed explicitly. */
export interface AppContext {
  config: Config;
  store: Store;
  clock: Clock;
  log: Logger;
  /** Spans (docs/observability.md "Tracing"): NO_TRACING unless an OTLP endpoint is set. */
  tracer: Tracer;
  services: Services;
}
