import type { ItemState } from './run-state.js';

/**
 * The items of one FOREACH as a run drives them (docs/workflows.md "FOREACH"): items start in index
 * order, at most `concurrency` at once; each is durable from its start. Pure bookkeeping for the run
 * machine, which decides what an item's attempt does.
 */
export class ItemRun {
  /** Items made so far, by index. */
  readonly items: ItemState[] = [];
  /** Items not finished (in flight, waiting for a retry or a child run). */
  readonly open = new Set<ItemState>();
  /** The first item that failed for good, if any. */
  firstFailed: ItemState | undefined;
  /** The lowest index not made yet. */
  private cursor = 0;

  constructor(
    /** The evaluated list the items come from. */
    readonly values: readonly unknown[],
    persisted: readonly ItemState[] = [],
  ) {
    for (const item of persisted) {
      this.items[item.index] = item;
      if (item.status === 'running') this.open.add(item);
      else this.finished(item);
    }
    this.skipMade();
  }

  /** The next index to start, or undefined when every item was made. */
  nextIndex(): number | undefined {
    return this.cursor < this.values.length ? this.cursor : undefined;
  }

  /** Records a new item (made at `nextIndex`). */
  add(item: ItemState): void {
    this.items[item.index] = item;
    if (item.status === 'running') this.open.add(item);
    else this.finished(item);
    this.skipMade();
  }

  /** An item reached a final status. */
  finished(item: ItemState): void {
    this.open.delete(item);
    if (item.status === 'failed' && (this.firstFailed === undefined || item.index < this.firstFailed.index))
      this.firstFailed = item;
  }

  /** Items not started: they never will be once the node stops on a failure. */
  notStarted(): number {
    let n = 0;
    for (let i = 0; i < this.values.length; i++) if (this.items[i] === undefined) n++;
    return n;
  }

  /** `{results}` in item order, whatever order they finished in. */
  results(): Array<{ index: number; status: string; output?: unknown; error?: string }> {
    const out: Array<{ index: number; status: string; output?: unknown; error?: string }> = [];
    for (let i = 0; i < this.values.length; i++) {
      const item = this.items[i];
      if (item === undefined) out.push({ index: i, status: 'not_started' });
      else if (item.status === 'completed') out.push({ index: i, status: 'completed', output: item.output });
      else out.push({ index: i, status: item.status, error: item.error ?? 'failed' });
    }
    return out;
  }

  private skipMade(): void {
    while (this.cursor < this.values.length && this.items[this.cursor] !== undefined) this.cursor++;
  }
}

/** A fresh item at `index`, started now (its first attempt begins when the engine runs it). */
export function newItem(id: string, index: number, input: unknown): ItemState {
  return {
    id,
    index,
    status: 'running',
    input,
    output: null,
    error: null,
    attempts: 0,
    interruptions: 0,
    resume_at: null,
    child_run_id: null,
    started_at: null,
    completed_at: null,
  };
}

/** What an `items` expression yielded, named for an error. */
export function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
