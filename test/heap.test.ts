import { describe, expect, it } from 'vitest';
import { boundHeapGrowth, HEAP_GROWING_PERCENT } from '../src/app/heap.js';

describe('boundHeapGrowth', () => {
  it("fixes V8's growing factor when the operator has not", () => {
    expect(boundHeapGrowth([], '')).toBe(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
    expect(boundHeapGrowth(['--enable-source-maps'], '--max-old-space-size=1024')).toBe(
      '--heap-growing-percent=40',
    );
  });

  it("leaves the operator's own flag standing, from node's arguments or NODE_OPTIONS, in either spelling", () => {
    expect(boundHeapGrowth(['--heap-growing-percent=100'], '')).toBeUndefined();
    expect(boundHeapGrowth([], '--enable-source-maps --heap_growing_percent=25')).toBeUndefined();
    expect(boundHeapGrowth([], '  --heap-growing-percent=0')).toBeUndefined();
  });
});
