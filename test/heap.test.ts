import v8 from 'node:v8';
import { afterAll, describe, expect, it } from 'vitest';
import { boundHeapGrowth } from '../src/app/heap.js';

describe('boundHeapGrowth', () => {
  // The flag is process-wide: give this test process's V8 its own choice back (0) for later files.
  afterAll(() => v8.setFlagsFromString('--heap-growing-percent=0'));

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
