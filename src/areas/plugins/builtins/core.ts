import { setTimeout as sleep } from 'node:timers/promises';
import { VERSION } from '../../../version.js';
import type { PluginModule } from '../manifest.js';

/**
 * `core`: small utilities for building and testing workflows (docs/plugins.md). They touch nothing
 * outside the process, so every action is idempotent.
 */
export function corePlugin(): PluginModule {
  return {
    manifest: {
      name: 'core',
      version: VERSION,
      instance_config_schema: { type: 'object', properties: {}, additionalProperties: false },
      actions: [
        {
          name: 'echo',
          title: 'Echo',
          description: 'Returns its input unchanged.',
          input_schema: {},
          output_schema: {},
          idempotent: true,
          timeout_seconds: 10,
        },
        {
          name: 'fail',
          title: 'Fail',
          description: 'Always fails with the given message (PLUGIN.INVOCATION_FAILED).',
          input_schema: {
            type: 'object',
            properties: { message: { type: 'string', maxLength: 1000 } },
            additionalProperties: false,
          },
          output_schema: {},
          idempotent: true,
          timeout_seconds: 10,
        },
        {
          name: 'sleep',
          title: 'Sleep',
          description: 'Waits `ms` milliseconds (stops early when the invocation is aborted), then answers.',
          input_schema: {
            type: 'object',
            required: ['ms'],
            properties: { ms: { type: 'integer', minimum: 0, maximum: 600_000 } },
            additionalProperties: false,
          },
          output_schema: {
            type: 'object',
            required: ['slept_ms'],
            properties: { slept_ms: { type: 'integer' } },
            additionalProperties: false,
          },
          idempotent: true,
          timeout_seconds: 600,
        },
      ],
    },
    handlers: {
      echo: ({ input }) => input,
      fail: ({ input }) => {
        throw new Error((input as { message?: string }).message ?? 'the fail action always fails');
      },
      sleep: async ({ input, signal }) => {
        const { ms } = input as { ms: number };
        await sleep(ms, undefined, { signal });
        return { slept_ms: ms };
      },
    },
  };
}
