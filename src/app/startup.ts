import { bootstrapAdmin } from '../areas/identity/bootstrap.js';
import type { AppContext } from './types.js';

/** Start-up tasks of the areas (bootstrap the admin, discover plugins, seal secrets an earlier version stored in plaintext), in order. */
export async function runStartup(ctx: AppContext): Promise<void> {
  await bootstrapAdmin({
    identity: ctx.services.identity,
    log: ctx.log,
    email: ctx.config.bootstrapAdminEmail,
    password: ctx.config.bootstrapAdminPassword,
  });
  await ctx.services.plugins.discover();
  await ctx.services.webhooks.sealPlaintextSecrets();
}
