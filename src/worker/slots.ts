/** A counting semaphore: work in flight in one process (e.g. a worker's ACTION calls). */
export class Slots {
  private used = 0;
  private readonly waiters: Array<() => void> = [];

  constructor(private readonly size: number) {}

  take(): boolean {
    if (this.used >= this.size) return false;
    this.used++;
    return true;
  }

  give(): void {
    this.used--;
    for (const w of this.waiters.splice(0)) w();
  }

  /** Resolves when a slot was given back (it may be taken again by then: take() says). */
  free(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}
