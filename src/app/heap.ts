import v8 from 'node:v8';

/**
 * Fixes how far every V8 heap of the process may grow past its live size before its next full
 * collection (SVC_HEAP_GROWING_PERCENT). V8 chooses up to 300 (4x) under Node's default heap
 * limit: a load begun before the API thread's memory reducer had run filled its old generation that
 * far; a low factor makes collections cost executions/s and the request p99 (docs/performance.md
 * "Memory"). V8 reads the flag at
 * each full collection, so setting it at start takes effect in the main thread and in any thread
 * started later.
 *
 * `percent` 0 leaves V8 its own choice, and node's own `--heap-growing-percent` (on its command
 * line; NODE_OPTIONS refuses the flag) stands. Returns what the start-up line says of it.
 */
export function boundHeapGrowth(percent: number, execArgv: readonly string[] = process.execArgv): string {
  if (execArgv.some((arg) => /^--heap[-_]growing[-_]percent\b/.test(arg))) return "node's flag";
  if (percent === 0) return "V8's choice";
  v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
  return `${percent}%`;
}
