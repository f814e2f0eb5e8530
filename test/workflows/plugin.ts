import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A package plugin `wftest` for workflow tests, loaded through SVC_PLUGIN_DIR exactly like any
 * package plugin. Every call is recorded in `globalThis.__wftestCalls` (same process) and, when the
 * input names a `log` file, appended to it (calls made by another process, e.g. a worker).
 */
const SOURCE = `
import { appendFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
const calls = (globalThis.__wftestCalls ??= []);
function note(action, input, key) {
  calls.push({ action, input, key });
  if (input && typeof input.log === 'string') appendFileSync(input.log, JSON.stringify({ action, key, pid: process.pid }) + '\\n');
}
const action = (name, idempotent, timeout_seconds) => ({ name, title: name, input_schema: {}, output_schema: {}, idempotent, timeout_seconds });
export default {
  manifest: {
    name: 'wftest',
    version: '1.0.0',
    instance_config_schema: { type: 'object' },
    actions: [
      action('record', true, 10),
      action('record_once', false, 10),
      action('flaky', true, 10),
      action('slow', true, 1),
      action('hang', true, 120),
      action('hang_once', false, 120),
      action('fail_with', true, 10),
      action('encode', true, 10),
    ],
  },
  handlers: {
    record: ({ input, idempotencyKey }) => { note('record', input, idempotencyKey); return { idempotency_key: idempotencyKey, input }; },
    record_once: ({ input, idempotencyKey }) => { note('record_once', input, idempotencyKey); return { idempotency_key: idempotencyKey, input }; },
    flaky: ({ input, idempotencyKey }) => {
      note('flaky', input, idempotencyKey);
      const made = calls.filter((c) => c.action === 'flaky' && c.key === idempotencyKey).length;
      if (made <= (input.fail_times ?? 0)) throw new Error('flaky failure ' + made);
      return { succeeded_on: made };
    },
    slow: async ({ input, signal }) => { note('slow', input); await sleep(input.ms, undefined, { signal }); return { slept: input.ms }; },
    hang: async ({ input, signal, idempotencyKey }) => { note('hang', input, idempotencyKey); await sleep(input.ms, undefined, { signal }); return { done: true, key: idempotencyKey }; },
    fail_with: ({ input }) => { throw new Error('rejected: ' + JSON.stringify(input)); },
    // Echoes input.value the ways a careless integration might: what secret masking must catch.
    encode: ({ input }) => {
      const v = String(input.value);
      const b = Buffer.from(v);
      return {
        url: 'https://x.example/cb?token=' + encodeURIComponent(v),
        form: new URLSearchParams({ token: v }).toString(),
        base64: b.toString('base64'),
        base64url: b.toString('base64url'),
        hex: b.toString('hex'),
        hex_upper: b.toString('hex').toUpperCase(),
        upper: v.toUpperCase(),
        basic: 'Basic ' + Buffer.from('svc-user:' + v).toString('base64'),
        bearer_json: JSON.stringify({ authorization: 'Bearer ' + v }),
      };
    },
    hang_once: async ({ input, signal, idempotencyKey }) => { note('hang_once', input, idempotencyKey); await sleep(input.ms, undefined, { signal }); return { done: true }; },
  },
};
`;

export function wftestPluginDir(): string {
  const root = mkdtempSync(join(tmpdir(), 'svc-wf-plugins-'));
  mkdirSync(join(root, 'wftest'));
  writeFileSync(join(root, 'wftest', 'index.mjs'), SOURCE);
  return root;
}

export interface PluginCall {
  action: string;
  input: Record<string, unknown>;
  key?: string;
}

/** Calls the wftest plugin received in this process. */
export function pluginCalls(): PluginCall[] {
  return ((globalThis as Record<string, unknown>).__wftestCalls as PluginCall[] | undefined) ?? [];
}
