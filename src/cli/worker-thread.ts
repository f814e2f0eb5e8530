import { parentPort, workerData } from 'node:worker_threads';
import pino from 'pino';
import { loggerOptions } from '../app/logger.js';
import { closeContext, createContext, createWorker } from '../app/runtime.js';
import type { ThreadMessage, WorkerThreadData } from '../app/worker-thread.js';

/**
 * The worker thread of `svc serve` (SVC_WORKER=thread): the background worker (outbox drain,
 * engines, timers) on a connection and services of its own, beside the API on the main thread. The
 * API's wakes arrive as messages; a stop message finishes the steps in flight, closes the store and
 * ends the thread. Should the start fail (the store unreachable), the thread ends with the error and
 * the API thread starts it again later.
 */
async function run(port: NonNullable<typeof parentPort>, data: WorkerThreadData): Promise<void> {
  const log = pino(loggerOptions(data.config.logLevel)).child({ thread: 'worker' });
  // The start-up tasks run again, as in `svc worker`: the main thread ran them already, so they find
  // their work done, but plugin discovery fills this thread's own registry of what it can run.
  const ctx = await createContext(data.config, { log, threadLock: data.threadLock });
  const worker = createWorker(ctx);
  port.on('message', (message: ThreadMessage) => {
    if (message.kind === 'wake') ctx.services.wakeups.wake(message.name);
    else if (message.kind === 'metrics')
      void ctx.services.metrics
        .getMetricsAsJSON()
        .then((metrics) => port.postMessage({ kind: 'metrics', id: message.id, metrics }));
    else if (message.kind === 'stop')
      // In a thread, process.exit ends the thread alone: nothing left open can keep it running.
      void worker
        .stop()
        .then(() => closeContext(ctx))
        .then(() => process.exit(0));
  });
  worker.start();
  port.postMessage({ kind: 'ready' });
}

if (parentPort) void run(parentPort, workerData as WorkerThreadData);
