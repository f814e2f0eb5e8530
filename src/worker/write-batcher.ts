import type { Store, Tx } from '../db/store.js';

/** Writes one group of same-kind items in a transaction; answers one result per item, in order. */
export type GroupWriter<I, R> = (tx: Tx, items: I[]) => Promise<R[]>;

interface Pending {
  kind: string;
  item: unknown;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit: the writes that many runs submit during the same turn of the event loop commit in one
 * transaction, and each submitter resumes only after that commit (so "persisted before the next step"
 * still holds for every run). Items of one kind are handed to their writer together, so it can use
 * multi-row statements: one commit and a few statements per batch instead of several per run step.
 *
 * A batch that fails is retried item by item, so one bad write cannot fail the writes of other runs.
 * Items touch different runs, so batches may commit concurrently where the store has several
 * connections (PostgreSQL); SQLite has one writer, so one batch at a time there.
 */
export class WriteBatcher {
  private readonly writers = new Map<string, GroupWriter<unknown, unknown>>();
  private queue: Pending[] = [];
  private active = 0;
  private scheduled = false;

  constructor(
    private readonly store: Store,
    private readonly maxBatch = 256,
    private readonly concurrency = store.dialect === 'postgres' ? 4 : 1,
  ) {}

  register<I, R>(kind: string, writer: GroupWriter<I, R>): (item: I) => Promise<R> {
    this.writers.set(kind, writer as GroupWriter<unknown, unknown>);
    return (item: I) =>
      new Promise<R>((resolve, reject) => {
        this.queue.push({ kind, item, resolve: resolve as (v: unknown) => void, reject });
        this.schedule();
      });
  }

  private schedule(): void {
    if (this.scheduled || this.active >= this.concurrency || this.queue.length === 0) return;
    this.scheduled = true;
    // Let every run that is ready in this turn submit first, then commit them together.
    setImmediate(() => {
      this.scheduled = false;
      if (this.active >= this.concurrency || this.queue.length === 0) return;
      this.active++;
      void this.commit(this.queue.splice(0, this.maxBatch)).finally(() => {
        this.active--;
        this.schedule();
      });
      this.schedule();
    });
  }

  private async write(tx: Tx, batch: Pending[]): Promise<unknown[]> {
    const results = new Array<unknown>(batch.length);
    const byKind = new Map<string, number[]>();
    for (const [i, p] of batch.entries()) {
      const list = byKind.get(p.kind) ?? [];
      list.push(i);
      byKind.set(p.kind, list);
    }
    for (const [kind, indexes] of byKind) {
      const writer = this.writers.get(kind) as GroupWriter<unknown, unknown>;
      const out = await writer(
        tx,
        indexes.map((i) => batch[i].item),
      );
      for (const [j, i] of indexes.entries()) results[i] = out[j];
    }
    return results;
  }

  private async commit(batch: Pending[]): Promise<void> {
    try {
      const results = await this.store.transaction((tx) => this.write(tx, batch));
      for (const [i, p] of batch.entries()) p.resolve(results[i]);
    } catch (err) {
      if (batch.length === 1) {
        batch[0].reject(err);
        return;
      }
      for (const p of batch) {
        try {
          p.resolve((await this.store.transaction((tx) => this.write(tx, [p])))[0]);
        } catch (e) {
          p.reject(e);
        }
      }
    }
  }
}
