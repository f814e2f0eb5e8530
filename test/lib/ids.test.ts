import { describe, expect, it } from 'vitest';
import { manualClock } from '../../src/lib/clock.js';
import { newId, timeOrderedIds } from '../../src/lib/ids.js';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('time-ordered ids', () => {
  it('are UUIDv7 carrying the clock time, strictly increasing within a millisecond', () => {
    const clock = manualClock(new Date('2026-01-01T00:00:00.000Z'));
    const next = timeOrderedIds(clock);
    const ids = Array.from({ length: 1000 }, () => next());
    for (const id of ids) expect(id).toMatch(UUID_V7);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    const ms = Number.parseInt((ids[0] as string).replace(/-/g, '').slice(0, 12), 16);
    expect(ms).toBe(clock.now().getTime());
  });

  it('keep increasing across milliseconds and when the clock steps back', () => {
    const clock = manualClock(new Date('2026-01-01T00:00:00.000Z'));
    const next = timeOrderedIds(clock);
    const ids: string[] = [];
    for (const step of [0, 1, 1, -5_000, 0, 3, -1, 10_000]) {
      clock.advance(step);
      ids.push(next(), next());
    }
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('carry through every part of the counter in order (rand_b low word, high word, rand_a)', () => {
    const clock = manualClock(new Date('2026-01-01T00:00:00.000Z'));
    // The largest start a millisecond can take: rand_a's top bit clear, every other bit set.
    const next = timeOrderedIds(clock, () =>
      Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
    );
    const ids = Array.from({ length: 3 }, () => next());
    expect(ids).toEqual([
      '019b76da-a800-77ff-bfff-ffffffffffff',
      '019b76da-a800-7800-8000-000000000000',
      '019b76da-a800-7800-8000-000000000001',
    ]);
    const lowCarry = timeOrderedIds(clock, () => Uint8Array.from([0, 1, 0, 0, 0, 5, 0xff, 0xff, 0xff, 0xff]));
    expect([lowCarry(), lowCarry()]).toEqual([
      '019b76da-a800-7001-8000-0005ffffffff',
      '019b76da-a800-7001-8000-000600000000',
    ]);
  });

  it('newId: every record id is a time-ordered UUIDv7 on the system clock', () => {
    const before = Date.now();
    const ids = Array.from({ length: 100 }, () => newId());
    const after = Date.now();
    for (const id of ids) expect(id).toMatch(UUID_V7);
    expect([...ids].sort()).toEqual(ids);
    const ms = Number.parseInt((ids[0] as string).replace(/-/g, '').slice(0, 12), 16);
    expect(ms).toBeGreaterThanOrEqual(before);
    expect(ms).toBeLessThanOrEqual(after);
  });
});
