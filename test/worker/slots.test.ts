import { describe, expect, it } from 'vitest';
import { Slots } from '../../src/worker/slots.js';

describe('Slots: ACTION calls in flight in one worker', () => {
  it('a slot given back passes to the longest waiter only, and nobody jumps the queue', async () => {
    const slots = new Slots(1);
    expect(slots.take()).toBe(true);
    const served: string[] = [];
    const first = slots.acquire().then(() => served.push('first'));
    const second = slots.acquire().then(() => served.push('second'));
    await Promise.resolve();
    expect(served).toEqual([]);
    // While some wait, a newcomer does not get a slot.
    expect(slots.take()).toBe(false);

    slots.give();
    await first;
    expect(served).toEqual(['first']); // one give wakes one waiter
    expect(slots.take()).toBe(false); // the slot is the first waiter's now

    slots.give();
    await second;
    expect(served).toEqual(['first', 'second']);
    slots.give();
    // Nobody waits: the slot is free again.
    expect(slots.take()).toBe(true);
  });

  it('acquire takes a free slot at once, and never more than the size are out', async () => {
    const slots = new Slots(2);
    await slots.acquire();
    expect(slots.take()).toBe(true);
    expect(slots.take()).toBe(false);
    let third = false;
    const waiting = slots.acquire().then(() => {
      third = true;
    });
    await Promise.resolve();
    expect(third).toBe(false);
    slots.give();
    await waiting;
    expect(third).toBe(true);
    expect(slots.take()).toBe(false);
  });
});
