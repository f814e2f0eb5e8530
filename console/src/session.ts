import { api, COOKIE_HEADER, ok, refreshAccess, type Schemas, setAccessToken } from './api/client';

export type CurrentUser = Schemas['CurrentUser'];

export type SignInResult = { kind: 'signed-in' } | { kind: 'mfa'; mfaToken: string };

/** Sign-in asks for the refresh token as a cookie (Svc-Refresh-Cookie): the page never holds it. */
export async function signIn(email: string, password: string): Promise<SignInResult> {
  const answer = await ok(
    api.POST('/api/v1/auth/login/credentials', { body: { email, password }, headers: COOKIE_HEADER }),
  );
  if ('mfa_required' in answer) return { kind: 'mfa', mfaToken: answer.mfa_token };
  setAccessToken(answer.access_token);
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
}

/** A reload keeps the session: the cookie gives a fresh access token, or the sign-in form shows. */
export function resume(): Promise<boolean> {
  return refreshAccess();
}

export async function currentUser(): Promise<CurrentUser> {
  return ok(api.GET('/api/v1/current_user'));
}

export async function signOut(): Promise<void> {
  await api.POST('/api/v1/auth/logout', { headers: COOKIE_HEADER });
  setAccessToken(null);
}
