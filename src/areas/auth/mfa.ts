import type { Store, Tx } from '../../db/store.js';
import type { Principal } from '../../http/access.js';
import { AppError, validationError } from '../../http/errors.js';
import { type Clock, iso } from '../../lib/clock.js';
import type { EventPublisher } from '../events/publish.js';
import { USER_EVENT_SOURCE } from '../identity/service.js';
import type { VaultService } from '../vault/service.js';
import { consumeTotpStep, mfaCiphertexts, updateAccount } from './account-store.js';
import type { Limiter } from './limiter.js';
import type { MfaCipher } from './secrets.js';
import type { Account, RequestMeta, SignIn } from './sign-in.js';
import { matchTotpStep, newTotpSecret, otpauthUrl } from './totp.js';

const MFA_ISSUER = 'svc';

export const invalidCode = () =>
  new AppError('AUTH.MFA_INVALID_CODE', 'The code is wrong, expired or was already used');
export const lastStep = (v: number | null) => (v === null ? null : Number(v));

/** No secret (or pending secret) left: what disabling MFA, or setting it up anew, clears. */
const NO_PENDING = { mfa_pending_secret: null, mfa_pending_verified: 0, mfa_pending_last_step: null };

/**
 * MFA management by a signed-in user, for themselves: set up a TOTP secret, verify a code, enable or
 * disable. The secrets are sealed under the vault key, which re-encrypts them when it rotates.
 */
export function createMfa(deps: {
  store: Store;
  clock: Clock;
  events: EventPublisher;
  vault: Pick<VaultService, 'registerCiphertexts'>;
  identity: { setMfaEnabled(tx: Tx, actor: string, userId: string, enabled: boolean): Promise<void> };
  signIn: SignIn;
  limiter: Limiter;
  cipher: MfaCipher;
}) {
  const { store, clock, signIn, limiter, cipher } = deps;
  deps.vault.registerCiphertexts('MFA secret(s) of users', async (tx, reencrypt) => {
    let count = 0;
    for (const row of await mfaCiphertexts(tx)) {
      const patch: { mfa_secret?: string; mfa_pending_secret?: string } = {};
      if (row.mfa_secret) patch.mfa_secret = reencrypt(row.mfa_secret, `user ${row.user_id} (MFA secret)`);
      if (row.mfa_pending_secret) {
        patch.mfa_pending_secret = reencrypt(
          row.mfa_pending_secret,
          `user ${row.user_id} (pending MFA secret)`,
        );
      }
      count += Object.keys(patch).length;
      await updateAccount(tx, row.user_id, patch);
    }
    return count;
  });

  function requireUserPrincipal(principal: Principal) {
    if (principal.authPath === 'api_key') {
      // The AUTH.FORBIDDEN detail shape (docs/errors.md): no scope would help, only the kind of credential.
      throw new AppError('AUTH.FORBIDDEN', 'MFA is managed by a signed-in user, not with an API key', {
        required_scopes: [],
        mode: 'any',
        required_auth: 'user',
      });
    }
  }

  async function accountOf(principal: Principal): Promise<Account> {
    requireUserPrincipal(principal);
    const account = await signIn.accountOf(store.db, principal.userId);
    if (!account) throw new AppError('AUTH.UNAUTHENTICATED', 'The user of this session no longer exists');
    return account;
  }

  /** Checks `code` against the pending secret (or the active one) and spends its time step. */
  async function checkCode(
    account: Account,
    which: 'pending' | 'active',
    code: string,
    meta: RequestMeta,
    alsoInTx?: (tx: Tx) => Promise<void>,
  ): Promise<void> {
    const admission = await limiter.admit(limiter.accountKey(account.email), meta.ip);
    const sealed = which === 'pending' ? account.mfa_pending_secret : account.mfa_secret;
    const column = which === 'pending' ? 'mfa_pending_last_step' : 'mfa_last_step';
    const step = matchTotpStep(
      cipher.decrypt(sealed!, account.id),
      code,
      clock.now().getTime(),
      lastStep(account[column]),
    );
    if (step === null) throw invalidCode();
    await store.transaction(async (tx) => {
      if (!(await consumeTotpStep(tx, account.id, column, step))) throw invalidCode();
      await alsoInTx?.(tx);
    });
    await admission.settle('passed');
  }

  async function mfaSetup(principal: Principal): Promise<{ secret: string; otpauth_url: string }> {
    const account = await accountOf(principal);
    if (account.mfa_enabled) {
      throw new AppError(
        'AUTH.MFA_ALREADY_ENABLED',
        'MFA is already enabled; disable it (PATCH /auth/mfa/enable with enabled false and a code) first',
      );
    }
    const secret = newTotpSecret();
    await store.transaction((tx) =>
      updateAccount(tx, account.id, { ...NO_PENDING, mfa_pending_secret: cipher.encrypt(secret) }),
    );
    return { secret, otpauth_url: otpauthUrl(secret, MFA_ISSUER, account.email) };
  }

  async function mfaVerify(
    principal: Principal,
    code: string,
    meta: RequestMeta,
  ): Promise<{ verified: true }> {
    const account = await accountOf(principal);
    if (account.mfa_pending_secret) {
      await checkCode(account, 'pending', code, meta, (tx) =>
        updateAccount(tx, account.id, { mfa_pending_verified: 1 }),
      );
    } else if (account.mfa_enabled && account.mfa_secret) {
      await checkCode(account, 'active', code, meta);
    } else {
      throw new AppError('AUTH.MFA_NOT_SET_UP', 'No MFA secret is set up: call POST /auth/mfa/setup first');
    }
    return { verified: true };
  }

  async function mfaEnable(
    principal: Principal,
    input: { enabled: boolean; code?: string },
    meta: RequestMeta,
  ): Promise<{ mfa_enabled: boolean }> {
    const account = await accountOf(principal);
    const actor = principal.userId;
    /** The switch itself: the user record's flag (with its event) and the secrets, in one transaction. */
    const switchTo = async (tx: Tx, enabled: boolean) => {
      await updateAccount(tx, account.id, {
        ...NO_PENDING,
        mfa_secret: enabled ? account.mfa_pending_secret : null,
        mfa_last_step: enabled ? account.mfa_pending_last_step : null,
        updated_at: iso(clock.now()),
        updated_by: actor,
      });
      await deps.identity.setMfaEnabled(tx, actor, account.id, enabled);
      await deps.events.publish(tx, {
        type: 'svc.user.updated',
        source: USER_EVENT_SOURCE,
        subject: account.id,
        data: { user_id: account.id, email: account.email, changed_fields: ['mfa_enabled'] },
        causation: principal.causation,
      });
    };
    if (input.enabled) {
      if (!account.mfa_pending_secret) {
        if (account.mfa_enabled) return { mfa_enabled: true };
        throw new AppError('AUTH.MFA_NOT_SET_UP', 'No MFA secret is set up: call POST /auth/mfa/setup first');
      }
      if (!account.mfa_pending_verified) {
        throw new AppError(
          'AUTH.MFA_NOT_VERIFIED',
          'The MFA secret is not verified yet: POST /auth/mfa/verify with a code first',
        );
      }
      await store.transaction((tx) => switchTo(tx, true));
      return { mfa_enabled: true };
    }
    if (!account.mfa_enabled) {
      if (account.mfa_pending_secret)
        await store.transaction((tx) => updateAccount(tx, account.id, NO_PENDING));
      return { mfa_enabled: false };
    }
    if (input.code === undefined)
      throw validationError('code is required to disable MFA', { field: 'code', in: 'body' });
    await checkCode(account, 'active', input.code, meta, (tx) => switchTo(tx, false));
    return { mfa_enabled: false };
  }

  return { mfaSetup, mfaVerify, mfaEnable };
}
