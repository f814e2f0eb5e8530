import type { ParseArgsConfig } from 'node:util';
import type { AppContext } from '../app/types.js';

/** One option of a command: what `parseArgs` needs, plus what `--help` prints. */
export interface CliOption {
  type: 'string' | 'boolean';
  multiple?: boolean;
  /** Placeholder of a string option's value in the usage line, e.g. "E" for `--email <E>`. */
  value?: string;
  /** Shown without brackets in the usage line (the command checks it; parseArgs has no such rule). */
  required?: boolean;
  help: string;
}

/** A CLI command an area contributes (`svc user create`, `svc api-key create`, `svc vault rotate-key`). */
export interface CliCommand {
  /** e.g. "user create" */
  name: string;
  summary: string;
  options: Record<string, CliOption>;
  run(ctx: AppContext, values: Record<string, string | string[] | boolean | undefined>): Promise<void>;
}

/** Throw this for a usage mistake: the CLI prints its message as one line. */
export class CliError extends Error {
  readonly code = 'SVC_CLI';
}

const HELP_OPTION: CliOption = { type: 'boolean', help: 'show this help and exit' };

/** The options `parseArgs` takes for a command, with `-h`/`--help` added to every command. */
export function parseArgsOptions(
  options: Record<string, CliOption>,
): NonNullable<ParseArgsConfig['options']> {
  const out: NonNullable<ParseArgsConfig['options']> = { help: { type: 'boolean', short: 'h' } };
  for (const [name, o] of Object.entries(options))
    out[name] = { type: o.type, multiple: o.multiple ?? false };
  return out;
}

/** `svc user create --email <E> [--name <N>] [--role <KEY> ...]` */
export function synopsis(name: string, options: Record<string, CliOption>): string {
  const parts = Object.entries(options).map(([flag, o]) => {
    const one = o.type === 'string' ? `--${flag} <${o.value ?? 'V'}>` : `--${flag}`;
    const many = o.multiple ? `${one} ...` : one;
    return o.required ? many : `[${many}]`;
  });
  return ['svc', name, ...parts].join(' ');
}

/** The text `svc <command> --help` prints. */
export function commandHelp(name: string, summary: string, options: Record<string, CliOption>): string {
  const rows = Object.entries({ ...options, help: HELP_OPTION }).map(([flag, o]) => {
    const left =
      flag === 'help' ? '-h, --help' : o.type === 'string' ? `--${flag} <${o.value ?? 'V'}>` : `--${flag}`;
    return [left, o.help] as const;
  });
  const width = Math.max(...rows.map(([l]) => l.length)) + 2;
  return [
    `Usage: ${synopsis(name, options)}`,
    '',
    summary,
    '',
    'Options:',
    ...rows.map(([l, h]) => `  ${l.padEnd(width)}${h}`),
  ].join('\n');
}
