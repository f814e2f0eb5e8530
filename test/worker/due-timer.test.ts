import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/lib/clock.js';
import { DueTimer } from '../../src/worker/due-timer.js';

/** The due timer wakes its job at each armed time in turn, a later one kept while an earlier is armed. */
describe('DueTimer', () => {
  it('wakes at an earlier time, then at a later one armed while the earlier was', async () => {
    const woken: number[] = [];
    const t0 = Date.now();
    const timer = new DueTimer(systemClock, () => woken.push(Date.now() - t0));
    timer.arm(t0 + 40);
    timer.arm(t0 + 120); // later: kept, not dropped
    timer.arm(t0 + 120); // twice: once
    await new Promise((r) => setTimeout(r, 250));
    expect(woken).toHaveLength(2);
    expect(woken[0]).toBeGreaterThanOrEqual(35);
    expect(woken[1]).toBeGreaterThanOrEqual(115);
    timer.clear();
  });

  it('an earlier time armed after a later one wakes first, and clear drops both', async () => {
    const woken: string[] = [];
    const t0 = Date.now();
    const timer = new DueTimer(systemClock, () => woken.push('wake'));
    timer.arm(t0 + 100);
    timer.arm(t0 + 20);
    await new Promise((r) => setTimeout(r, 60));
    expect(woken).toEqual(['wake']);
    timer.clear();
    await new Promise((r) => setTimeout(r, 100));
    expect(woken).toEqual(['wake']);
  });
});
