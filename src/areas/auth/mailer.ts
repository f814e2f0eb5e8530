import type { Transport, Transporter } from 'nodemailer';
import type { Logger } from 'pino';
import { VERSION } from '../../version.js';

export interface MailMessage {
  to: string;
  subject: string;
  /** May hold a one-time token: never logged outside development. */
  text: string;
  /** What the mail is for, logged instead of its content. */
  kind: string;
}

export interface Mailer {
  readonly transport: 'smtp' | 'log';
  send(message: MailMessage): Promise<void>;
  close(): void;
}

export interface MailerDeps {
  log: Logger;
  smtpUrl: string | undefined;
  from: string;
  /** Only in development does the log transport print the mail body (so the flow can be finished locally). */
  development: boolean;
}

/** `someone@example.com` → `s***@example.com`: enough to follow a log, not an address list. */
export function maskEmail(address: string): string {
  const at = address.lastIndexOf('@');
  if (at < 1) return '***';
  return `${address[0]}***${address.slice(at)}`;
}

/**
 * Outgoing mail through nodemailer: SMTP when SVC_SMTP_URL is set, otherwise a log transport that
 * records that a mail was sent (recipient masked, subject, kind) without its body, so no reset token
 * reaches the log. Development alone logs the body too.
 */
export function createMailer(deps: MailerDeps): Mailer {
  const { log } = deps;
  // nodemailer is loaded at the first mail, not at start: most processes send none for a long time,
  // and loading it costs heap and code (docs/performance.md "Memory").
  let transporter: Promise<Transporter> | undefined;
  const transporterOf = () =>
    (transporter ??= import('nodemailer').then(({ default: nodemailer }) =>
      deps.smtpUrl
        ? nodemailer.createTransport(deps.smtpUrl, { from: deps.from })
        : nodemailer.createTransport(logTransport, { from: deps.from }),
    ));
  // The URL may carry credentials: only its host is ever logged.
  if (deps.smtpUrl) log.info({ smtp_host: new URL(deps.smtpUrl).host }, 'mail goes through SMTP');
  const logTransport: Transport = {
    name: 'svc-log',
    version: VERSION,
    send(mail, callback) {
      const kind = String(
        mail.data.headers && (mail.data.headers as Record<string, string>)['x-svc-mail-kind'],
      );
      const entry: Record<string, unknown> = {
        mail: { to: maskEmail(String(mail.data.to)), subject: mail.data.subject, kind },
      };
      if (deps.development) entry.mail_body = mail.data.text;
      log.info(entry, 'mail sent (log transport: SVC_SMTP_URL is not set)');
      callback(null, { envelope: mail.message.getEnvelope(), messageId: mail.message.messageId() });
    },
  };
  return {
    transport: deps.smtpUrl ? 'smtp' : 'log',
    async send(message) {
      await (await transporterOf()).sendMail({
        to: message.to,
        subject: message.subject,
        text: message.text,
        headers: { 'x-svc-mail-kind': message.kind },
      });
    },
    // A transporter that could not be made has nothing to close (its send already failed).
    close: () =>
      void transporter?.then(
        (t) => t.close(),
        () => {},
      ),
  };
}
