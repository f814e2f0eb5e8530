import v8 from 'node:v8';

/**
 * How far a V8 heap may grow past its live size before its next full collection, in per cent.
 * V8 chooses up to 300 (4x) when the heap limit is 2 GiB or more, as Node's default is; the API
 * thread's old generation then kept the allocation limit set-up had left it, and a load begun
 * before its memory reducer ran peaked 30 MiB higher (docs/performance.md "Memory", "The API
 * thread's growing factor"). 40 is what the worker thread's 512 MiB limit already gives it.
 */
export const HEAP_GROWING_PERCENT = 40;

/**
 * Fixes V8's growing factor for every isolate of the process, unless the operator set one
 * (`--heap-growing-percent` in node's arguments or NODE_OPTIONS). V8 reads the flag at each full
 * collection, so setting it at start takes effect for the main thread and any thread started later.
 * Returns the flag set, or undefined when the operator's stands.
 */
export function boundHeapGrowth(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string = process.env.NODE_OPTIONS ?? '',
): string | undefined {
  const given = [...execArgv, ...nodeOptions.split(/\s+/)].some((arg) =>
    /^--heap[-_]growing[-_]percent\b/.test(arg),
  );
  if (given) return undefined;
  const flag = `--heap-growing-percent=${HEAP_GROWING_PERCENT}`;
  v8.setFlagsFromString(flag);
  return flag;
}
