import { createRequire } from 'node:module';
import type * as Undici from 'undici';

const require = createRequire(import.meta.url);
let loaded: typeof Undici | undefined;

/**
 * undici, loaded on the first outbound call: it is the largest library svc uses (heap in each thread
 * that loads it), and a process that has made no call yet (an idle one, or the API
 * thread when the worker runs in a thread of its own) never needs it; docs/performance.md "Memory".
 */
export function undici(): typeof Undici {
  loaded ??= require('undici') as typeof Undici;
  return loaded;
}
