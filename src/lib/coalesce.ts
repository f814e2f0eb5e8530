/**
 * Coalesces concurrent lookups into batched queries: the per-request credential check under load.
 * Lookups asked during one turn of the event loop leave together at its end (setImmediate); while
 * `maxInFlight` batches are out, new lookups wait and leave together as soon as one answers. A batch
 * always leaves after every lookup in it was asked for, so no answer is older than a query of its
 * own would have been: a revocation committed before a request arrived is seen by that request.
 * Nothing is cached.
 *
 * Under load one query answers many requests (all of them, when they share a key; figures in
 * docs/identity.md). (DataLoader batches by tick too, but caches by default and does not hold lookups while its
 * store is busy; the whole of this is shorter than configuring it.)
 */
export function coalescing<K, V>(
  loadMany: (keys: K[]) => Promise<Map<K, V>>,
  options: { maxInFlight?: number; maxBatch?: number } = {},
): (key: K) => Promise<V | undefined> {
  const maxInFlight = options.maxInFlight ?? 1;
  const maxBatch = options.maxBatch ?? 64;
  type Waiter = { resolve: (v: V | undefined) => void; reject: (err: unknown) => void };
  let queued = new Map<K, Waiter[]>();
  let inFlight = 0;
  let turnEndScheduled = false;

  function send() {
    const batch = queued;
    queued = new Map();
    inFlight++;
    let answer: Promise<Map<K, V>>;
    try {
      answer = loadMany([...batch.keys()]);
    } catch (err) {
      answer = Promise.reject(err);
    }
    answer.then(
      (found) => {
        settled();
        for (const [key, waiters] of batch) for (const w of waiters) w.resolve(found.get(key));
      },
      (err) => {
        settled();
        for (const waiters of batch.values()) for (const w of waiters) w.reject(err);
      },
    );
  }

  /** The next batch leaves before this one's answers are handed out: its round trip starts sooner. */
  function settled() {
    inFlight--;
    if (queued.size > 0 && inFlight < maxInFlight) send();
  }

  function atTurnEnd() {
    turnEndScheduled = false;
    if (queued.size > 0 && inFlight < maxInFlight) send();
  }

  return (key) =>
    new Promise<V | undefined>((resolve, reject) => {
      const waiters = queued.get(key);
      if (waiters) waiters.push({ resolve, reject });
      else queued.set(key, [{ resolve, reject }]);
      if (queued.size >= maxBatch) send();
      else if (inFlight < maxInFlight && !turnEndScheduled) {
        turnEndScheduled = true;
        setImmediate(atTurnEnd);
      }
    });
}
