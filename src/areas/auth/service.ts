import type { Logger } from 'pino';
import type { Config } from '../../config/config.js';
import type { Store } from '../../db/store.js';
import type { Clock } from '../../lib/clock.js';
import type { Job } from '../../worker/worker.js';
import type { EventPublisher } from '../events/publish.js';
import type { IdentityService } from '../identity/service.js';
import type { VaultService } from '../vault/service.js';
import { createDevices } from './devices.js';
import { createExternalIdp } from './external-idp.js';
import { createLimiter } from './limiter.js';
import { createLogin } from './login.js';
import { createMailer, type Mailer } from './mailer.js';
import { createMfa } from './mfa.js';
import { createPasswordReset } from './password-reset.js';
import { createRefresh } from './refresh.js';
import { createMfaCipher } from './secrets.js';
import { createUserSettings } from './settings.js';
import { createSignIn } from './sign-in.js';

export { MFA_CHALLENGE_MAX_ATTEMPTS, type MfaRequired } from './login.js';
export { RESET_REQUEST_MESSAGE, RESET_REQUESTS_PER_WINDOW } from './password-reset.js';
export type { UserAuthSettings } from './settings.js';
export type { RequestMeta, TokenResponse } from './sign-in.js';

export interface AuthDeps {
  store: Store;
  clock: Clock;
  log: Logger;
  identity: IdentityService;
  events: EventPublisher;
  config: Config;
  /** TOTP secrets are sealed by the vault, whose key rotation re-encrypts them too. */
  vault: Pick<VaultService, 'registerCiphertexts' | 'seal' | 'open'>;
  /** Replaces the nodemailer transport built from the config (never needed in production). */
  mailer?: Mailer;
}

type Flows = ReturnType<typeof createLogin> &
  ReturnType<typeof createMfa> &
  Omit<ReturnType<typeof createRefresh>, 'cleanupJob'> &
  Omit<ReturnType<typeof createPasswordReset>, 'flushMail'> &
  ReturnType<typeof createDevices> &
  ReturnType<typeof createUserSettings>;

/**
 * Sign-in flows (docs/auth.md), one module each: login (credentials, the MFA step, external IdP),
 * MFA management, refresh-token rotation, password reset and change, devices, per-user settings.
 * Every sign-in starts a session (identity's auth_session) that is also its refresh-token family
 * (sign-in.ts); ending the session stops its access tokens at once (the authenticator checks `sid`).
 */
export interface AuthService extends Flows {
  /** The 24-hour job soft-deleting expired refresh tokens (docs/auth.md "Refresh tokens"). */
  cleanupJob: Job;
  mailTransport: Mailer['transport'];
  /** Waits for mails still being sent (graceful shutdown; tests). */
  flushMail(): Promise<void>;
  close(): Promise<void>;
}

export function createAuthService(deps: AuthDeps): AuthService {
  const { store, clock, log, identity, config } = deps;
  const settings = config.auth;
  const signIn = createSignIn({ store, clock, identity, config, settings });
  const limiter = createLimiter({ store, clock, settings });
  const cipher = createMfaCipher({ vault: deps.vault, log });
  const mailer =
    deps.mailer ??
    createMailer({
      log,
      smtpUrl: config.smtpUrl,
      from: config.mailFrom,
      development: config.nodeEnv === 'development',
    });
  const idp = createExternalIdp({
    settings: { issuer: config.oidcIssuer, audience: config.oidcAudience, jwksUrl: config.oidcJwksUrl },
    clock,
    log,
  });
  const flows = { store, clock, log, identity, settings, signIn, limiter };
  const { cleanupJob, ...refresh } = createRefresh(flows);
  const { flushMail, ...reset } = createPasswordReset({ ...flows, mailer });
  return {
    ...createLogin({ ...flows, cipher, idp }),
    ...createMfa({ ...flows, events: deps.events, vault: deps.vault, cipher }),
    ...refresh,
    ...reset,
    ...createDevices(flows),
    ...createUserSettings(flows),
    cleanupJob,
    mailTransport: mailer.transport,
    flushMail,
    async close() {
      await flushMail();
      mailer.close();
    },
  };
}
