import { describe, expect, it } from 'vitest';
import { coalescing } from '../../src/lib/coalesce.js';

/** A loader whose batches are answered by hand, recording what each batch asked for. */
function manualLoader() {
  const batches: Array<{
    keys: string[];
    answer: (found?: Map<string, string>) => void;
    fail: (err: Error) => void;
  }> = [];
  const load = (keys: string[]) =>
    new Promise<Map<string, string>>((resolve, reject) => {
      batches.push({
        keys,
        answer: (found = new Map(keys.map((k) => [k, `value of ${k}`]))) => resolve(found),
        fail: reject,
      });
    });
  return { batches, load };
}
const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('coalescing lookups', () => {
  it('sends the lookups of one event-loop turn together, each key once', async () => {
    const { batches, load } = manualLoader();
    const lookup = coalescing(load);
    const turn = [lookup('a'), lookup('b'), lookup('a')];
    expect(batches).toHaveLength(0);
    await tick();
    expect(batches.map((b) => b.keys)).toEqual([['a', 'b']]);
    batches[0].answer();
    expect(await Promise.all(turn)).toEqual(['value of a', 'value of b', 'value of a']);
  });

  it('holds the lookups asked while a batch is out and sends them together when it answers', async () => {
    const { batches, load } = manualLoader();
    const lookup = coalescing(load);
    const a = lookup('a');
    await tick();
    const waiting = [lookup('b'), lookup('c'), lookup('b')];
    await tick();
    expect(batches.map((b) => b.keys)).toEqual([['a']]); // nothing leaves while a batch is out
    batches[0].answer();
    expect(await a).toBe('value of a');
    expect(batches.map((b) => b.keys)).toEqual([['a'], ['b', 'c']]);
    batches[1].answer();
    expect(await Promise.all(waiting)).toEqual(['value of b', 'value of c', 'value of b']);
  });

  it('never answers a lookup from a batch that left before it was asked', async () => {
    const { batches, load } = manualLoader();
    const lookup = coalescing(load);
    const early = lookup('k');
    await tick();
    const late = lookup('k'); // asked after the first batch left: must wait for a batch of its own
    batches[0].answer(new Map([['k', 'before']]));
    expect(await early).toBe('before');
    expect(batches).toHaveLength(2);
    batches[1].answer(new Map([['k', 'after']]));
    expect(await late).toBe('after');
  });

  it('answers undefined for a key the batch did not find', async () => {
    const { batches, load } = manualLoader();
    const lookup = coalescing(load);
    const missing = lookup('nope');
    await tick();
    batches[0].answer(new Map());
    expect(await missing).toBeUndefined();
  });

  it('a failed batch rejects each of its lookups, and the next batch still leaves', async () => {
    const { batches, load } = manualLoader();
    const lookup = coalescing(load);
    const first = lookup('a');
    await tick();
    const next = lookup('b');
    batches[0].fail(new Error('store down'));
    await expect(first).rejects.toThrow('store down');
    await tick();
    expect(batches.map((b) => b.keys)).toEqual([['a'], ['b']]);
    batches[1].answer();
    expect(await next).toBe('value of b');
  });

  it('a full batch leaves without waiting for the one out', async () => {
    const { batches, load } = manualLoader();
    const lookup = coalescing(load, { maxBatch: 3 });
    const first = lookup('a');
    await tick();
    const full = ['b', 'c', 'd'].map(lookup);
    expect(batches.map((b) => b.keys)).toEqual([['a'], ['b', 'c', 'd']]);
    const all = [first, ...full];
    for (const b of batches) b.answer();
    expect(await Promise.all(all)).toEqual(['value of a', 'value of b', 'value of c', 'value of d']);
  });
});
