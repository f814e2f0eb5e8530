import type { ParseArgsConfig } from 'node:util';
import type { AppContext } from '../app/types.js';

/** A CLI command an area contributes (`svc user create`, `svc api-key create`, `svc vault rotate-key`). */
export interface CliCommand {
  /** e.g. "user create" */
  name: string;
  usage: string;
  summary: string;
  options: NonNullable<ParseArgsConfig['options']>;
  run(ctx: AppContext, values: Record<string, string | string[] | boolean | undefined>): Promise<void>;
}

/** Throw this for a usage mistake: the CLI prints its message as one line. */
export class CliError extends Error {
  readonly code = 'SVC_CLI';
}
