import type { Wakeups } from './wakeups.js';

/**
 * When a job whose new work is handed to it in memory (written already claimed by it) should also
 * ask the store for due work: after a `wake` for the store (`Wakeups.takeWoken`), when the caller
 * knows something is due (a timer of its own, nothing in memory), after a claim that came back full,
 * and at least every `pollMs`. Any other step claims nothing: under load most claims found nothing.
 */
export class ClaimGate {
  private nextAskAt = 0;
  private full = false;

  constructor(
    private readonly wakeups: Pick<Wakeups, 'takeWoken'>,
    private readonly name: string,
    private readonly pollMs: number,
  ) {}

  /** Whether this step asks the store; `due`: the caller knows of due work there. */
  shouldAsk(nowMs: number, due: boolean): boolean {
    const woken = this.wakeups.takeWoken(this.name);
    if (!(woken || due || this.full || nowMs >= this.nextAskAt)) return false;
    this.nextAskAt = nowMs + this.pollMs;
    return true;
  }

  /** Records a claim's result: a full one means more is due now. */
  claimed(count: number, limit: number): void {
    this.full = count === limit;
  }

  /** The last claim came back full. */
  get more(): boolean {
    return this.full;
  }
}
