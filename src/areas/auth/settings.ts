import type { Static } from '@sinclair/typebox';
import type { Store } from '../../db/store.js';
import { AppError } from '../../http/errors.js';
import { findAccount, updateAccount } from './account-store.js';
import type { UserAuthSettings as UserAuthSettingsSchema } from './schemas.js';
import { ENFORCED_PATHS, type SignIn } from './sign-in.js';
import { endMfaChallenges } from './token-store.js';

export type UserAuthSettings = Static<typeof UserAuthSettingsSchema>;

/** A user's sign-in settings (auth:manage): per-user lifetimes and the password-reset requirement. */
export function createUserSettings(deps: { store: Store; signIn: SignIn }) {
  const { store, signIn } = deps;

  async function getUserSettings(userId: string): Promise<UserAuthSettings> {
    const account = await signIn.accountOf(store.db, userId);
    if (!account) throw new AppError('USER.NOT_FOUND', 'User not found');
    return {
      user_id: account.id,
      mfa_enabled: account.mfa_enabled,
      password_reset_required: Boolean(account.password_reset_required),
      access_token_ttl_seconds: account.access_token_ttl_seconds,
      refresh_token_ttl_seconds: account.refresh_token_ttl_seconds,
    };
  }

  async function updateUserSettings(
    actor: string,
    userId: string,
    patch: {
      access_token_ttl_seconds?: number | null;
      refresh_token_ttl_seconds?: number | null;
      password_reset_required?: boolean;
    },
  ): Promise<UserAuthSettings> {
    await getUserSettings(userId);
    await store.transaction(async (tx) => {
      const before = await findAccount(tx.db, userId);
      const t = signIn.now();
      await updateAccount(tx, userId, {
        ...(patch.access_token_ttl_seconds !== undefined && {
          access_token_ttl_seconds: patch.access_token_ttl_seconds,
        }),
        ...(patch.refresh_token_ttl_seconds !== undefined && {
          refresh_token_ttl_seconds: patch.refresh_token_ttl_seconds,
        }),
        ...(patch.password_reset_required !== undefined && {
          password_reset_required: patch.password_reset_required ? 1 : 0,
        }),
        updated_at: t,
        updated_by: actor,
      });
      if (patch.password_reset_required && !before.password_reset_required) {
        // Sign-ins that rested on the password end now; IdP, device and API-key access is not affected.
        await signIn.endSignIns(tx, 'password_reset_required', { userId, authPaths: [...ENFORCED_PATHS] });
        await endMfaChallenges(tx, userId, t);
      }
    });
    return getUserSettings(userId);
  }

  return { getUserSettings, updateUserSettings };
}
