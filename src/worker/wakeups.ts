/**
 * In-process wake-up signals between the API and the worker's loops (`outbox`, `webhooks`, ...).
 * A wake before anyone listens is remembered, so a loop never sleeps through work published meanwhile.
 * Where the loops run in a worker thread (`svc serve`, SVC_WORKER=thread), the API's Wakeups forwards
 * every wake to the thread's.
 *
 * Two kinds of wake: `wake` says "there may be new work in the store" and is noted until the loop
 * asks (`takeWoken`); `nudge` only runs the loop for work it was handed in memory (the outbox's
 * tasks written already claimed), so the loop can skip asking the store for it.
 */
export class Wakeups {
  private readonly listeners = new Map<string, () => void>();
  private readonly pending = new Set<string>();
  private readonly woken = new Set<string>();
  private forwardTo: ((name: string) => void) | undefined;

  wake(name: string): void {
    if (this.forwardTo) {
      this.forwardTo(name);
      return;
    }
    this.woken.add(name);
    this.nudge(name);
  }

  /** Runs the loop `name` (now, or when it starts listening) without noting a wake for `takeWoken`. */
  nudge(name: string): void {
    const listener = this.listeners.get(name);
    if (listener) listener();
    else this.pending.add(name);
  }

  /** Whether `wake(name)` was called since the last call (or ever, the first time); clears the note. */
  takeWoken(name: string): boolean {
    return this.woken.delete(name);
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
    this.woken.clear();
  }
}
