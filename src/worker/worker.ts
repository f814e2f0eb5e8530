import type { Logger } from 'pino';
import type { Wakeups } from './wakeups.js';

/** A background loop: runs every `intervalMs`, and at once when woken under its name. */
export interface Job {
  name: string;
  intervalMs: number;
  /** One step. Returns true when more work is likely waiting, so the loop goes again at once. */
  run(): Promise<boolean>;
  /** Called once when the worker starts (e.g. the outbox opens its LISTEN connection). */
  start?(): void;
  /** Called once after the job's last step, on graceful stop (release connections and timers). */
  stop?(): Promise<void>;
}

/**
 * Runs each job in its own loop. `stop()` lets the step in flight finish (graceful shutdown) and
 * never starts another one.
 */
export class Worker {
  private stopping = false;
  private readonly loops: Promise<void>[] = [];
  private readonly sleepers = new Map<string, () => void>();

  constructor(
    private readonly jobs: Job[],
    private readonly wakeups: Wakeups,
    private readonly log: Logger,
  ) {}

  start(): void {
    for (const job of this.jobs) {
      job.start?.();
      this.loops.push(this.loop(job));
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    for (const job of this.jobs) this.wakeups.unlisten(job.name);
    for (const wake of this.sleepers.values()) wake();
    await Promise.all(this.loops);
    await Promise.all(this.jobs.map((job) => job.stop?.()));
  }

  private async loop(job: Job): Promise<void> {
    let woken = false;
    this.wakeups.listen(job.name, () => {
      woken = true;
      this.sleepers.get(job.name)?.();
    });
    while (!this.stopping) {
      woken = false;
      let more = false;
      try {
        more = await job.run();
      } catch (err) {
        this.log.error({ err, job: job.name }, 'background job step failed');
      }
      if (this.stopping) break;
      if (more || woken) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, job.intervalMs);
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.sleepers.set(job.name, done);
      });
      this.sleepers.delete(job.name);
    }
  }
}
