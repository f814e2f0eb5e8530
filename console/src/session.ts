import { api, COOKIE_HEADER, ok, refreshAccess, type Schemas, setAccessToken } from './api/client';

export type CurrentUser = Schemas['CurrentUser'];

/**
 * Whether this browser signed in and has not signed out: the page cannot see the HttpOnly cookie, and
 * asking the server on every first visit would answer a stranger with a 401. Holds no secret.
 */
const SIGNED_IN = 'svc-signed-in';
const remember = (signedIn: boolean) =>
  signedIn ? localStorage.setItem(SIGNED_IN, '1') : localStorage.removeItem(SIGNED_IN);

export type SignInResult = { kind: 'signed-in' } | { kind: 'mfa'; mfaToken: string };

/** Sign-in asks for the refresh token as a cookie (Svc-Refresh-Cookie): the page never holds it. */
export async function signIn(email: string, password: string): Promise<SignInResult> {
  const answer = await ok(
    api.POST('/api/v1/auth/login/credentials', { body: { email, password }, headers: COOKIE_HEADER }),
  );
  if ('mfa_required' in answer) return { kind: 'mfa', mfaToken: answer.mfa_token };
  setAccessToken(answer.access_token);
  remember(true);
  return { kind: 'signed-in' };
}

export async function verifyMfa(mfaToken: string, code: string): Promise<void> {
  const answer = await ok(
    api.POST('/api/v1/auth/login/mfa_verify', {
      body: { mfa_token: mfaToken, code },
      headers: COOKIE_HEADER,
    }),
  );
  setAccessToken(answer.access_token);
  remember(true);
}

/** A reload keeps the session: the cookie gives a fresh access token, or the sign-in form shows. */
export async function resume(): Promise<boolean> {
  if (!localStorage.getItem(SIGNED_IN)) return false;
  const resumed = await refreshAccess();
  if (!resumed) remember(false);
  return resumed;
}

export async function currentUser(): Promise<CurrentUser> {
  return ok(api.GET('/api/v1/current_user'));
}

export async function signOut(): Promise<void> {
  await api.POST('/api/v1/auth/logout', { headers: COOKIE_HEADER });
  setAccessToken(null);
  remember(false);
}
