interface Entry<V> {
  key: string;
  value: V;
  newer: Entry<V> | null;
  older: Entry<V> | null;
}

/**
 * A bounded map that forgets the least recently used entry first. The entries are a list from the
 * newest to the oldest beside a Map of them, so every operation is O(1): dropping a Map's first key
 * instead would scan the holes its deletes leave at its front, which grows with the churn.
 */
export class Lru<V> {
  private readonly map = new Map<string, Entry<V>>();
  private newest: Entry<V> | null = null;
  private oldest: Entry<V> | null = null;

  constructor(private readonly max: number) {}

  /** The value under `key`, made by `make` and kept when absent. */
  getOrCreate(key: string, make: () => V): V {
    const found = this.map.get(key);
    if (found !== undefined) {
      this.unlink(found);
      this.link(found);
      return found.value;
    }
    const entry: Entry<V> = { key, value: make(), newer: null, older: null };
    this.map.set(key, entry);
    this.link(entry);
    if (this.map.size > this.max && this.oldest !== null) this.delete(this.oldest.key);
    return entry.value;
  }

  delete(key: string): void {
    const entry = this.map.get(key);
    if (entry === undefined) return;
    this.map.delete(key);
    this.unlink(entry);
  }

  get size(): number {
    return this.map.size;
  }

  private link(entry: Entry<V>): void {
    entry.older = this.newest;
    entry.newer = null;
    if (this.newest !== null) this.newest.newer = entry;
    this.newest = entry;
    this.oldest ??= entry;
  }

  private unlink(entry: Entry<V>): void {
    if (entry.newer !== null) entry.newer.older = entry.older;
    else this.newest = entry.older;
    if (entry.older !== null) entry.older.newer = entry.newer;
    else this.oldest = entry.newer;
    entry.newer = null;
    entry.older = null;
  }
}
