/**
 * In-process wake-up signals between the API and the worker's loops (`outbox`, `webhooks`, ...).
 * A wake before anyone listens is remembered, so a loop never sleeps through work published meanwhile.
 */
export class Wakeups {
  private readonly listeners = new Map<string, () => void>();
  private readonly pending = new Set<string>();

  wake(name: string): void {
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
}
