import { describe, expect, it } from 'vitest';
import { boundHeapGrowth } from '../src/app/heap.js';

describe('boundHeapGrowth', () => {
  it("fixes V8's growing factor at the percent configured, and 0 leaves V8 its choice", () => {
    expect(boundHeapGrowth(100, [])).toBe('100%');
    expect(boundHeapGrowth(40, ['--enable-source-maps', '--max-old-space-size=1024'])).toBe('40%');
    expect(boundHeapGrowth(0, [])).toBe("V8's choice");
  });

  it("leaves node's own flag standing, in either spelling", () => {
    expect(boundHeapGrowth(100, ['--heap-growing-percent=0'])).toBe("node's flag");
    expect(boundHeapGrowth(100, ['--enable-source-maps', '--heap_growing_percent=25'])).toBe("node's flag");
  });
});
