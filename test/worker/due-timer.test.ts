import { describe, expect, it } from 'vitest';
import { manualClock, systemClock } from '../../src/lib/clock.js';
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

  it("a wake-up that fires before its time by the job's clock stays armed, and is due when the clock gets there", async () => {
    const clock = manualClock(new Date('2026-03-01T10:00:00.000Z'));
    const woken: string[] = [];
    const timer = new DueTimer(clock, () => woken.push('wake'));
    const at = clock.now().getTime() + 30;
    timer.arm(at);
    // 30 ms of real time pass; the job's clock stands still.
    await new Promise((r) => setTimeout(r, 80));
    expect(woken).toEqual([]);
    expect(timer.isDue(clock.now().getTime())).toBe(false);
    clock.advance(30);
    expect(timer.isDue(clock.now().getTime())).toBe(true);
    await new Promise((r) => setTimeout(r, 80));
    expect(woken).toEqual(['wake']);
    expect(timer.isDue(clock.now().getTime())).toBe(false);
    timer.clear();
  });
});
