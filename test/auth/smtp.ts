import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerAuthentication } from 'smtp-server';

export interface ReceivedMail {
  from: string;
  to: string[];
  /** The raw message, quoted-printable decoded (the text part is all these tests read). */
  raw: string;
}

/**
 * A real SMTP server on 127.0.0.1 (the `smtp-server` package) that keeps what it receives; with
 * `auth`, it requires that user and password (AUTH PLAIN/LOGIN) before it takes a message.
 */
export async function startSmtp(auth?: { user: string; pass: string }) {
  const mails: ReceivedMail[] = [];
  const waiters: Array<() => void> = [];
  const server = new SMTPServer({
    ...(auth
      ? {
          allowInsecureAuth: true,
          authMethods: ['PLAIN', 'LOGIN'],
          disabledCommands: ['STARTTLS'],
          onAuth(
            login: SMTPServerAuthentication,
            _session: unknown,
            cb: (err: Error | null, res?: { user: string }) => void,
          ) {
            if (login.username === auth.user && login.password === auth.pass) cb(null, { user: auth.user });
            else cb(new Error('Invalid username or password'));
          },
        }
      : { authOptional: true, disabledCommands: ['STARTTLS', 'AUTH'] }),
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        mails.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks)
            .toString('utf8')
            .replace(/=\r?\n/g, '')
            .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16))),
        });
        for (const w of waiters.splice(0)) w();
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    /** Resolves once `count` mails have arrived. */
    async waitFor(count: number): Promise<ReceivedMail[]> {
      while (mails.length < count) await new Promise<void>((resolve) => waiters.push(resolve));
      return mails;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export const tokenIn = (raw: string, prefix = 'svc_reset_') =>
  new RegExp(`${prefix}[0-9A-Za-z]{43}`).exec(raw)?.[0];
