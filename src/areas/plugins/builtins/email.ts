import net from 'node:net';
import { AppError } from '../../../http/errors.js';
import { ForbiddenTargetError, type GuardOptions, resolveTarget } from '../../../lib/net-guard.js';
import { VERSION } from '../../../version.js';
import type { PluginModule } from '../manifest.js';

const TIMEOUT_SECONDS = 60;
const CONNECT_TIMEOUT_MS = 10_000;

interface EmailConfig {
  host: string;
  port: number;
  secure?: boolean;
  require_tls?: boolean;
  tls_reject_unauthorized?: boolean;
  username?: string;
  password?: string;
  from: string;
}

interface EmailInput {
  to: string | string[];
  cc?: string | string[];
  bcc?: string | string[];
  reply_to?: string;
  subject: string;
  text?: string;
  html?: string;
  headers?: Record<string, string>;
}

const Addresses = {
  anyOf: [
    { type: 'string', minLength: 3, maxLength: 998 },
    { type: 'array', items: { type: 'string', minLength: 3, maxLength: 998 }, minItems: 1, maxItems: 100 },
  ],
};

/**
 * `email`: sends one message through the SMTP server configured in the instance (nodemailer). The
 * password is meant to be a `$secret:` reference, resolved only for the send. The connection is
 * opened here, to an address net-guard checked first (same policy as webhooks).
 */
export function emailPlugin(network: GuardOptions): PluginModule {
  return {
    manifest: {
      name: 'email',
      version: VERSION,
      instance_config_schema: {
        type: 'object',
        required: ['host', 'port', 'from'],
        properties: {
          host: { type: 'string', minLength: 1, maxLength: 255 },
          port: { type: 'integer', minimum: 1, maximum: 65535 },
          secure: { type: 'boolean', description: 'TLS from the first byte (usually port 465)' },
          require_tls: { type: 'boolean', description: 'Fail unless STARTTLS upgrades the connection' },
          tls_reject_unauthorized: { type: 'boolean', description: 'Default true: verify the certificate' },
          username: { type: 'string', maxLength: 500 },
          password: { type: 'string', maxLength: 1000, description: 'A $secret: reference' },
          from: { type: 'string', minLength: 3, maxLength: 998 },
        },
        additionalProperties: false,
      },
      actions: [
        {
          name: 'send',
          title: 'Send an email',
          description:
            'Sends one message over SMTP; answers the message id and the accepted and rejected recipients.',
          input_schema: {
            type: 'object',
            required: ['to', 'subject'],
            properties: {
              to: Addresses,
              cc: Addresses,
              bcc: Addresses,
              reply_to: { type: 'string', minLength: 3, maxLength: 998 },
              subject: { type: 'string', maxLength: 998 },
              text: { type: 'string', maxLength: 1_000_000 },
              html: { type: 'string', maxLength: 1_000_000 },
              headers: { type: 'object', additionalProperties: { type: 'string' } },
            },
            anyOf: [{ required: ['text'] }, { required: ['html'] }],
            additionalProperties: false,
          },
          output_schema: {
            type: 'object',
            required: ['message_id', 'accepted', 'rejected', 'response'],
            properties: {
              message_id: { type: 'string' },
              accepted: { type: 'array', items: { type: 'string' } },
              rejected: { type: 'array', items: { type: 'string' } },
              response: { type: 'string' },
            },
            additionalProperties: false,
          },
          idempotent: false,
          timeout_seconds: TIMEOUT_SECONDS,
        },
      ],
    },
    handlers: {
      send: async ({ config, input, signal }) => {
        const cfg = config as unknown as EmailConfig;
        const msg = input as EmailInput;
        // Loaded at the first send, not at start (docs/performance.md "Memory").
        const { default: nodemailer } = await import('nodemailer');
        const transport = nodemailer.createTransport({
          host: cfg.host,
          port: cfg.port,
          secure: cfg.secure ?? false,
          requireTLS: cfg.require_tls ?? false,
          tls: { rejectUnauthorized: cfg.tls_reject_unauthorized ?? true, servername: cfg.host },
          auth: cfg.username !== undefined ? { user: cfg.username, pass: cfg.password ?? '' } : undefined,
          connectionTimeout: CONNECT_TIMEOUT_MS,
          greetingTimeout: CONNECT_TIMEOUT_MS,
          socketTimeout: TIMEOUT_SECONDS * 1000,
          logger: false,
          getSocket: (_opts, callback) => guardedSocket(cfg, network, callback),
        });
        const abort = () => transport.close();
        signal.addEventListener('abort', abort, { once: true });
        try {
          const info = await transport.sendMail({
            from: cfg.from,
            to: msg.to,
            cc: msg.cc,
            bcc: msg.bcc,
            replyTo: msg.reply_to,
            subject: msg.subject,
            text: msg.text,
            html: msg.html,
            headers: msg.headers,
          });
          return {
            message_id: info.messageId,
            accepted: info.accepted.map(addressText),
            rejected: info.rejected.map(addressText),
            response: info.response,
          };
        } catch (err) {
          if (err instanceof ForbiddenTargetError) {
            throw new AppError('PLUGIN.INVOCATION_FAILED', `email.send refused: ${err.message}`, {
              field: 'host',
              reason: err.reason,
            });
          }
          throw err;
        } finally {
          signal.removeEventListener('abort', abort);
          transport.close();
        }
      },
    },
  };
}

/**
 * Opens the SMTP connection to an address checked first (net-guard's `resolveTarget`): a loopback,
 * private, link-local or metadata host is refused before any packet leaves, so the action cannot be
 * used to probe which internal ports are open. TLS still verifies the certificate against `host`.
 */
function guardedSocket(
  cfg: EmailConfig,
  network: GuardOptions,
  callback: (err: Error | null, socketOptions: object | false) => void,
): void {
  resolveTarget(cfg.host, network).then(
    ({ address }) => {
      const socket = net.connect({ host: address, port: cfg.port });
      const fail = (err: Error) => {
        socket.destroy();
        callback(err, false);
      };
      socket.setTimeout(CONNECT_TIMEOUT_MS, () =>
        fail(new Error(`connection to ${cfg.host}:${cfg.port} timed out`)),
      );
      socket.once('error', fail);
      socket.once('connect', () => {
        socket.setTimeout(0);
        socket.removeListener('error', fail);
        // nodemailer attaches its own handlers a tick later; until then an error must not crash the process.
        socket.on('error', () => {});
        callback(null, { connection: socket });
      });
    },
    (err: Error) => callback(err, false),
  );
}

function addressText(a: string | { address: string }): string {
  return typeof a === 'string' ? a : a.address;
}
