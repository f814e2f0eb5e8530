import { useState } from 'preact/hooks';
import { signIn, verifyMfa } from '../session';
import { ErrorNote } from '../ui/bits';
import { useAction } from '../ui/use-action';

/** Email and password, then a TOTP code when the account has MFA (the API's own two steps). */
export function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [mfaToken, setMfaToken] = useState<string | null>(null);
  const [error, run] = useAction();
  const [busy, setBusy] = useState(false);

  const submit = async (ev: Event) => {
    ev.preventDefault();
    const form = new FormData(ev.currentTarget as HTMLFormElement);
    setBusy(true);
    await run(async () => {
      if (mfaToken) {
        await verifyMfa(mfaToken, String(form.get('code')));
        onSignedIn();
      } else {
        const result = await signIn(String(form.get('email')), String(form.get('password')));
        if (result.kind === 'mfa') setMfaToken(result.mfaToken);
        else onSignedIn();
      }
    });
    setBusy(false);
  };

  return (
    <main class="signin">
      <h1>svc console</h1>
      <form class="panel" onSubmit={submit} aria-label="sign in">
        {mfaToken ? (
          <label>
            Authenticator code
            <input name="code" inputMode="numeric" autoComplete="one-time-code" required />
          </label>
        ) : (
          <>
            <label>
              Email
              <input name="email" type="email" autoComplete="username" required />
            </label>
            <label>
              Password
              <input name="password" type="password" autoComplete="current-password" required />
            </label>
          </>
        )}
        <ErrorNote error={error} />
        <button class="primary" type="submit" disabled={busy}>
          {mfaToken ? 'Verify' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
