import { readFileSync } from 'node:fs';
import { type CliCommand, CliError } from '../../cli/command.js';

/**
 * `svc vault rotate-key --new-key <K>` (or `--new-key-file <path>`, which keeps the key out of the
 * shell history and the process list). Re-encrypts every SECRET, and the values other areas
 * registered (MFA secrets), under the new key in one transaction; see docs/vault.md for the
 * zero-downtime order of steps.
 */
export const vaultRotateKeyCommand: CliCommand = {
  name: 'vault rotate-key',
  summary: 're-encrypt vault SECRETs and MFA secrets under a new vault key, in one transaction',
  options: {
    'new-key': { type: 'string', value: 'K', help: 'the new key (give this or --new-key-file)' },
    'new-key-file': {
      type: 'string',
      value: 'PATH',
      help: 'a file holding the new key (keeps it out of shell history and the process list)',
    },
  },
  async run(ctx, values) {
    const inline = values['new-key'];
    const file = values['new-key-file'];
    if ((inline === undefined) === (file === undefined)) {
      throw new CliError('vault rotate-key needs exactly one of --new-key <K> or --new-key-file <path>');
    }
    let newKey: string;
    if (typeof file === 'string') {
      try {
        newKey = readFileSync(file, 'utf8').trim();
      } catch (err) {
        throw new CliError(`cannot read --new-key-file: ${(err as Error).message}`);
      }
    } else {
      newKey = String(inline);
    }
    if (newKey.length === 0) throw new CliError('the new vault key must not be empty');
    let result: Awaited<ReturnType<typeof ctx.services.vault.rotateKey>>;
    try {
      result = await ctx.services.vault.rotateKey(newKey);
    } catch (err) {
      throw new CliError((err as Error).message);
    }
    const others = result.also.map((a) => `${a.rotated} ${a.what}`);
    const also = others.length > 0 ? `, and ${others.join(' and ')}` : '';
    console.log(
      `re-encrypted ${result.rotated} secret(s) under the new key${also}. Now set SVC_VAULT_ENCRYPTION_KEY ` +
        'to the new key on every process; keep the old one in SVC_VAULT_PREVIOUS_KEYS until all have restarted.',
    );
  },
};
