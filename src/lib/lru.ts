/** A bounded map that forgets the least recently used entry first (a Map keeps insertion order). */
export class Lru<V> {
  private readonly map = new Map<string, V>();
  constructor(private readonly max: number) {}

  /** The value under `key`, made by `make` and kept when absent. */
  getOrCreate(key: string, make: () => V): V {
    let value = this.map.get(key);
    if (value !== undefined) {
      this.map.delete(key);
      this.map.set(key, value);
      return value;
    }
    value = make();
    this.map.set(key, value);
    if (this.map.size > this.max) this.map.delete(this.map.keys().next().value as string);
    return value;
  }

  delete(key: string): void {
    this.map.delete(key);
  }
}
