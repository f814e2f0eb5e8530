import { bootstrapAdmin } from '../areas/identity/bootstrap.js';
import type { AppContext } from './types.js';

/** Start-up tasks of the areas (seed built-ins, bootstrap the admin, discover plugins), in order. */
export async function runStartup(ctx: AppContext): Promise<void> {
  await bootstrapAdmin(ctx);
  await ctx.services.plugins.discover();
}
