import type { Logger } from 'pino';
import type { IdentityService } from './service.js';

/**
 * SVC_BOOTSTRAP_ADMIN_EMAIL/_PASSWORD: at start, create this admin if no active user has that email
 * (README "Configuration"). An existing user is left alone, so restarts are harmless.
 */
export async function bootstrapAdmin(deps: {
  identity: Pick<IdentityService, 'findUserByEmail' | 'createUser'>;
  log: Logger;
  email: string | undefined;
  password: string | undefined;
}): Promise<void> {
  const { identity, email, password } = deps;
  if (!email || !password) return;
  if (await identity.findUserByEmail(email)) return;
  try {
    const user = await identity.createUser(null, {
      email,
      password,
      name: 'Administrator',
      role_keys: ['admin'],
    });
    deps.log.info({ user_id: user.id, email }, 'created the bootstrap admin user');
  } catch (err) {
    // Two processes starting at once: the other one created it.
    if ((err as { code?: string }).code === 'USER.EMAIL_EXISTS') return;
    throw err;
  }
}
