import { describe, expect, it } from 'vitest';
import { PLAN_CACHE_SIZE, type Plan, PlanCache } from '../../src/areas/workflows/plan.js';

/** The engine's compiled-plan cache (src/areas/workflows/plan.ts): sized for many active subscriptions. */
describe('plan cache', () => {
  const plan = (subscriptionId: string): Plan => ({
    subscriptionId,
    version: 1,
    nodes: [],
    byKey: new Map(),
    edges: [],
  });

  it('keeps a plan for each of thousands of active subscriptions: no recompiling per event', async () => {
    const cache = new PlanCache();
    let loads = 0;
    const get = (i: number) =>
      cache.get(`sub-${i}`, 1, async () => {
        loads++;
        return plan(`sub-${i}`);
      });
    const active = 4000;
    // Events round-robin over every active subscription, twice: the second round is all hits.
    for (let round = 0; round < 2; round++) for (let i = 0; i < active; i++) await get(i);
    expect(loads).toBe(active);
  });

  it('is bounded: past PLAN_CACHE_SIZE the least recently used plan is dropped', async () => {
    expect(PLAN_CACHE_SIZE).toBeGreaterThanOrEqual(4096);
    const cache = new PlanCache(3);
    const loaded: string[] = [];
    const get = (id: string) =>
      cache.get(id, 1, async () => {
        loaded.push(id);
        return plan(id);
      });
    for (const id of ['a', 'b', 'c', 'a', 'd', 'a', 'b']) await get(id);
    // 'b' was the least recently used when 'd' came in, so it was loaded again.
    expect(loaded).toEqual(['a', 'b', 'c', 'd', 'b']);
  });
});
