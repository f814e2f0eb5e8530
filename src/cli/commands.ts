import { identityCommands } from '../areas/identity/cli.js';
import { exportDeliveriesCommand, exportRunsCommand, vacuumCommand } from '../areas/retention/cli.js';
import { vaultRotateKeyCommand } from '../areas/vault/cli.js';
import type { CliCommand } from './command.js';

/** Commands the areas contribute, listed in `svc --help`. */
export const cliCommands: CliCommand[] = [
  ...identityCommands,
  vaultRotateKeyCommand,
  exportRunsCommand,
  exportDeliveriesCommand,
  vacuumCommand,
];
