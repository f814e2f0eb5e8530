import type { RunMachine } from '../machine.js';
import { attemptKey, type Invoke, invokeKey, LIMIT_WAIT } from '../run-state.js';

/** An ACTION's wait for its plugin instance's limits (docs/plugins.md "Limits"). */

/** The attempt asks its plugin instance's limits (a slot freed meanwhile is remembered). */
export function askLimit(m: RunMachine, inv: Invoke): void {
  m.askingLimit.set(invokeKey(inv), false);
}

/** The attempt may start: its limits admitted it. */
export function limitAdmitted(m: RunMachine, inv: Invoke): void {
  m.askingLimit.delete(invokeKey(inv));
}

/**
 * The attempt may not start yet: its plugin instance's `limit` is reached (docs/plugins.md
 * "Limits"). It waits until `until` (now, when a slot freed for it while it asked) and counts no
 * attempt; the node says which limit it waits for.
 */
export function limitWait(
  m: RunMachine,
  inv: Invoke,
  until: Date,
  limit: string,
  instanceId: string,
  now: Date,
): void {
  const key = invokeKey(inv);
  const freed = m.askingLimit.get(key) === true;
  m.askingLimit.delete(key);
  m.ready.delete(key);
  if (!m.wants(inv)) return;
  m.waitedForLimit = true;
  const at = (freed ? now : until).toISOString();
  if (inv.item !== undefined) {
    inv.item.resume_at = at;
    m.markItem(inv.node, inv.item);
    return;
  }
  const st = inv.state;
  st.status = 'running';
  st.resume_at = at;
  st.wait_kind = 'limit';
  st.wait_key = `${LIMIT_WAIT}${limit}:${instanceId}`;
  m.dirty.add(st);
}

/**
 * A slot of the limit the attempt of node `nodeKey` (item `index` of a FOREACH) waits for freed:
 * it asks again now. False when it does not wait (any more).
 */
export function limitFreed(m: RunMachine, nodeKey: string, index: number | undefined, now: Date): boolean {
  const asking = attemptKey(nodeKey, index);
  if (m.askingLimit.has(asking)) {
    m.askingLimit.set(asking, true);
    return true;
  }
  const st = m.nodes.get(nodeKey);
  if (!st || !m.accepts(st)) return false;
  const at = now.toISOString();
  if (index === undefined) {
    if (st.resume_at === null || st.wait_kind !== 'limit') return false;
    st.resume_at = at;
    m.dirty.add(st);
    return true;
  }
  const node = m.plan.nodes.find((n) => n.key === nodeKey);
  const item = node && [...(m.itemRuns.get(nodeKey)?.open ?? [])].find((i) => i.index === index);
  if (!node || !item || item.resume_at === null) return false;
  item.resume_at = at;
  m.markItem(node, item);
  return true;
}
