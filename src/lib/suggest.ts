/**
 * "Did you mean" for names users type: operators in expressions, event types in subscriptions and
 * webhooks. Edits between two names, a swap of neighbours counting as one ("vra" -> "var").
 */
export function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 0; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/** Whether the letters of `a` appear in `b` in order ("vr" in "var"). */
export function isSubsequence(a: string, b: string): boolean {
  let i = 0;
  for (const c of b) if (c === a[i]) i++;
  return i === a.length;
}

/**
 * Up to `limit` candidates close to `name` (case-insensitive), closest first: within a third of the
 * name's length in edits, or containing it (a prefix typed in full, "order" for "com.shop.order.paid").
 */
export function closestNames(name: string, candidates: Iterable<string>, limit = 3): string[] {
  const typed = name.toLowerCase();
  const budget = Math.max(2, Math.floor(typed.length / 3));
  const scored: Array<[number, string]> = [];
  for (const c of candidates) {
    const lower = c.toLowerCase();
    const d = lower.includes(typed) ? 0.5 : editDistance(typed, lower);
    if (d <= budget) scored.push([d, c]);
  }
  return scored
    .sort((x, y) => x[0] - y[0] || x[1].localeCompare(y[1]))
    .slice(0, limit)
    .map(([, c]) => c);
}
