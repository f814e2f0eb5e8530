/**
 * A counting semaphore: work in flight in one process (e.g. a worker's ACTION calls). A slot given
 * back passes straight to the longest waiter, so one give wakes one waiter: waking them all made each
 * of hundreds of waiting runs step again for one slot (quadratic under load).
 */
export class Slots {
  private used = 0;
  private readonly waiters: Array<() => void> = [];

  constructor(private readonly size: number) {}

  /** Takes a slot if one is free and nobody waits for one (waiters are served first). */
  take(): boolean {
    if (this.used >= this.size || this.waiters.length > 0) return false;
    this.used++;
    return true;
  }

  give(): void {
    const next = this.waiters.shift();
    // The slot stays taken: it is the waiter's now.
    if (next) next();
    else this.used--;
  }

  /** Resolves when a slot is the caller's (who must `give` it back), in the order callers asked. */
  acquire(): Promise<void> {
    if (this.take()) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}
