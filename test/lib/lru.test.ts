import { describe, expect, it } from 'vitest';
import { Lru } from '../../src/lib/lru.js';

describe('Lru', () => {
  it('keeps what is used, makes each value once while kept, and stays within its bound', () => {
    const lru = new Lru<number>(10);
    let made = 0;
    const get = (k: string) => lru.getOrCreate(k, () => ++made);
    expect(get('hot')).toBe(1);
    for (let i = 0; i < 1000; i++) {
      get(`k${i}`);
      // A key used all along is never forgotten.
      expect(get('hot')).toBe(1);
      expect(lru.size).toBeLessThanOrEqual(10);
    }
    expect(made).toBe(1001);
    // A key used once long ago is forgotten and made again.
    expect(get('k0')).toBe(1002);
    expect(get('k0')).toBe(1002);
  });

  it('forgets a deleted key', () => {
    const lru = new Lru<string>(4);
    lru.getOrCreate('a', () => 'first');
    lru.delete('a');
    expect(lru.getOrCreate('a', () => 'second')).toBe('second');
  });
});
