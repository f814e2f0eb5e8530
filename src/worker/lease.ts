import { type Clock, iso } from '../lib/clock.js';

/**
 * The lease clock of a job: how long a claim is exclusive, and a heartbeat that keeps a claim alive
 * while its work runs. A holder that stops renewing (crash, stall) lets the lease run out, and the
 * next claim by any worker takes the work over.
 */
export interface Lease {
  readonly ms: number;
  /** When a lease taken or renewed now runs out (ISO time, as stored). */
  until(): string;
  /**
   * Calls `renew` every third of the lease until the returned stop function is called; a failed
   * renewal is reported to `onError` and retried at the next beat (the lease may still hold).
   */
  heartbeat(renew: (until: string) => Promise<unknown>, onError: (err: unknown) => void): () => void;
}

export function createLease(clock: Clock, ms: number): Lease {
  const until = () => iso(new Date(clock.now().getTime() + ms));
  return {
    ms,
    until,
    heartbeat(renew, onError) {
      const beat = setInterval(
        () => {
          renew(until()).catch(onError);
        },
        Math.max(Math.floor(ms / 3), 10),
      );
      beat.unref();
      return () => clearInterval(beat);
    },
  };
}
