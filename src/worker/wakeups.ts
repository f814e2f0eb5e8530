/**
 * In-process wake-up signals between the API and the worker's loops (`outbox`, `webhooks`, ...).
 * A wake before anyone listens is remembered, so a loop never sleeps through work published meanwhile.
 * Where the loops run in a worker thread (`svc serve`, SVC_WORKER=thread), the API's Wakeups forwards
 * every wake to the thread's.
 */
export class Wakeups {
  private readonly listeners = new Map<string, () => void>();
  private readonly pending = new Set<string>();
  private forwardTo: ((name: string) => void) | undefined;

  wake(name: string): void {
    if (this.forwardTo) {
      this.forwardTo(name);
      return;
    }
    const listener = this.listeners.get(name);
    if (listener) listener();
    else this.pending.add(name);
  }

  /** One listener per name (the loop of that name). */
  listen(name: string, fn: () => void): void {
    this.listeners.set(name, fn);
    if (this.pending.delete(name)) fn();
  }

  unlisten(name: string): void {
    this.listeners.delete(name);
  }

  /** From now on every wake goes to `to` (the worker thread), the ones remembered so far first. */
  forward(to: (name: string) => void): void {
    this.forwardTo = to;
    for (const name of this.pending) to(name);
    this.pending.clear();
  }
}
