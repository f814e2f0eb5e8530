import type { AppContext } from '../../app/types.js';

/**
 * SVC_BOOTSTRAP_ADMIN_EMAIL/_PASSWORD: at start, create this admin if no active user has that email
 * (CONTRACTS §1). An existing user is left alone, so restarts are harmless.
 */
export async function bootstrapAdmin(ctx: AppContext): Promise<void> {
  const { bootstrapAdminEmail: email, bootstrapAdminPassword: password } = ctx.config;
  if (!email || !password) return;
  const identity = ctx.services.identity;
  if (await identity.findUserByEmail(email)) return;
  try {
    const user = await identity.createUser(null, {
      email,
      password,
      name: 'Administrator',
      role_keys: ['admin'],
    });
    ctx.log.info({ user_id: user.id, email }, 'created the bootstrap admin user');
  } catch (err) {
    // Two processes starting at once: the other one created it.
    if ((err as { code?: string }).code === 'USER.EMAIL_EXISTS') return;
    throw err;
  }
}
