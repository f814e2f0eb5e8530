import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { admin } from '../helpers/auth.js';
import { dialectName } from '../helpers/store.js';
import { type Answer, client } from './helpers.js';

const SMTP_PASSWORD = 'smtp-password-5d81e0b7';

interface Received {
  from: string | false;
  to: string[];
  raw: string;
}

/** A real SMTP server on 127.0.0.1 that requires AUTH and keeps every message it accepts. */
async function startSmtp() {
  const messages: Received[] = [];
  const logins: Array<{ username?: string; ok: boolean }> = [];
  let connections = 0;
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    authMethods: ['PLAIN', 'LOGIN'],
    logger: false,
    onConnect(_session, cb) {
      connections++;
      cb();
    },
    onAuth(auth, _session, cb) {
      const ok = auth.username === 'mailer' && auth.password === SMTP_PASSWORD;
      logins.push({ username: auth.username, ok });
      if (ok) return cb(null, { user: 'mailer' });
      return cb(new Error('Invalid username or password'));
    },
    onData(stream, session, cb) {
      let raw = '';
      stream.on('data', (c) => {
        raw += c;
      });
      stream.on('end', () => {
        messages.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : false,
          to: session.envelope.rcptTo.map((r) => r.address),
          raw,
        });
        cb();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  // TCP handshakes, before any SMTP: a refused target must not even get one.
  let handshakes = 0;
  server.server.on('connection', () => handshakes++);
  return {
    handshakes: () => handshakes,
    port: (server.server.address() as AddressInfo).port,
    messages,
    logins,
    connections: () => connections,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe(`email built-in plugin (${dialectName})`, () => {
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  let t: TestApp;
  let api: ReturnType<typeof client>;
  let instance: string;
  const answers: Answer[] = [];
  const config = () => ({
    host: '127.0.0.1',
    port: smtp.port,
    username: 'mailer',
    password: '$secret:smtp_password',
    from: 'svc <noreply@example.test>',
  });
  beforeAll(async () => {
    smtp = await startSmtp();
    t = await startTestApp({ env: { SVC_ALLOW_PRIVATE_NETWORKS: 'true' } });
    api = client(t, (await admin(t)).headers, answers);
    expect((await api.vault('smtp_password', SMTP_PASSWORD)).status).toBe(200);
    instance = await api.instance('email', config());
  });
  afterAll(async () => {
    await t.close();
    await smtp.close();
  });

  it('sends a message over SMTP with the password resolved from the vault', async () => {
    const res = await api.invoke(instance, {
      action: 'send',
      payload: {
        to: ['ada@example.test', 'grace@example.test'],
        cc: 'linus@example.test',
        subject: 'Your report is ready',
        text: 'Hello from the email plugin.',
        html: '<p>Hello from the <b>email</b> plugin.</p>',
        reply_to: 'support@example.test',
        headers: { 'X-Campaign': 'q3' },
      },
    });
    expect(res.status).toBe(200);
    const { output } = res.json();
    expect(output.message_id).toMatch(/^<.+@.+>$/);
    expect(output.accepted).toEqual(['ada@example.test', 'grace@example.test', 'linus@example.test']);
    expect(output.rejected).toEqual([]);
    expect(output.response).toMatch(/^250 /);
    expect(smtp.logins.at(-1)).toEqual({ username: 'mailer', ok: true });
    const msg = smtp.messages.at(-1)!;
    expect(msg.from).toBe('noreply@example.test');
    expect(msg.to).toEqual(['ada@example.test', 'grace@example.test', 'linus@example.test']);
    expect(msg.raw).toContain('Subject: Your report is ready');
    expect(msg.raw).toContain('Hello from the email plugin.');
    expect(msg.raw).toContain('Reply-To: support@example.test');
    expect(msg.raw).toContain('X-Campaign: q3');
    expect(msg.raw).toContain(`Message-ID: ${output.message_id}`);
  });

  it('a wrong password fails with 502 PLUGIN.INVOCATION_FAILED and the server reason, not the password', async () => {
    await api.vault('smtp_wrong', 'not-the-password-1234');
    const wrong = await api.instance('email', { ...config(), password: '$secret:smtp_wrong' });
    const sent = smtp.messages.length;
    const res = await api.invoke(wrong, {
      action: 'send',
      payload: { to: 'a@example.test', subject: 's', text: 't' },
    });
    expect(res.status).toBe(502);
    expect(res.json().code).toBe('PLUGIN.INVOCATION_FAILED');
    expect(res.json().message).toMatch(/^email\.send failed: .*Invalid username or password/);
    expect(res.body).not.toContain('not-the-password-1234');
    expect(smtp.messages.length).toBe(sent);
  });

  it('invalid input and config are 400 with the validator messages', async () => {
    const noBody = await api.invoke(instance, {
      action: 'send',
      payload: { to: 'a@example.test', subject: 's' },
    });
    expect(noBody.status).toBe(400);
    expect(noBody.json().code).toBe('PLUGIN.INVALID_INPUT');
    expect(noBody.json().details.errors).toEqual(
      expect.arrayContaining([
        { path: '/text', message: 'is required' },
        { path: '/html', message: 'is required' },
      ]),
    );
    const badConfig = await api.create({
      plugin_definition_id: await api.definitionId('email'),
      display_name: 'bad',
      enabled: true,
      config_json: { host: '127.0.0.1', port: '$var:smtp_port', from: 'a@b.c', tls: true },
    });
    expect(badConfig.status).toBe(400);
    expect(badConfig.json().details.errors).toEqual(
      expect.arrayContaining([
        { path: '/port', message: 'must be integer' },
        { path: '/tls', message: 'is not an allowed property' },
      ]),
    );
  });

  it('an unreachable SMTP server fails cleanly', async () => {
    const closed = await api.instance('email', { ...config(), port: 1 });
    const res = await api.invoke(closed, {
      action: 'send',
      payload: { to: 'a@example.test', subject: 's', text: 't' },
    });
    expect(res.status).toBe(502);
    expect(res.json().message).toMatch(/^email\.send failed: .*ECONNREFUSED/);
  });

  it('the SMTP password appears in no answer, no log line and no stored config', async () => {
    for (const a of answers) expect(a.body).not.toContain(SMTP_PASSWORD);
    expect(t.logText()).not.toContain(SMTP_PASSWORD);
    const rows = await t.ctx.store.db.selectFrom('plugin_instance').select('config_json').execute();
    for (const r of rows) expect(r.config_json ?? '').not.toContain(SMTP_PASSWORD);
  });
});

describe(`email built-in plugin without SVC_ALLOW_PRIVATE_NETWORKS (${dialectName})`, () => {
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  let t: TestApp;
  beforeAll(async () => {
    smtp = await startSmtp();
    t = await startTestApp();
  });
  afterAll(async () => {
    await t.close();
    await smtp.close();
  });

  it('refuses a loopback SMTP host before any connection: no handshake, and the same answer for open and closed ports', async () => {
    const api = client(t, (await admin(t)).headers);
    await api.vault('smtp_password', SMTP_PASSWORD);
    const refusal = async (host: string, port: number) => {
      const id = await api.instance('email', {
        host,
        port,
        username: 'mailer',
        password: '$secret:smtp_password',
        from: 'noreply@example.test',
      });
      const res = await api.invoke(id, {
        action: 'send',
        payload: { to: 'a@example.test', subject: 's', text: 't' },
      });
      expect(res.status, host).toBe(502);
      return res.json();
    };
    const open = await refusal('127.0.0.1', smtp.port);
    expect(open).toEqual({
      code: 'PLUGIN.INVOCATION_FAILED',
      message:
        'email.send refused: Target 127.0.0.1 is a loopback address; only public addresses are allowed unless SVC_ALLOW_PRIVATE_NETWORKS=true',
      details: { field: 'host', reason: 'loopback' },
    });
    // A closed port answers exactly the same: the action cannot tell open from closed ports.
    expect(await refusal('127.0.0.1', 9)).toEqual(open);
    // A host name resolving to loopback, and IPv6 loopback, are refused the same way.
    expect((await refusal('localhost', smtp.port)).message).toMatch(
      /^email\.send refused: Target (127\.0\.0\.1|::1) is a loopback address \(host "localhost" resolves to/,
    );
    expect((await refusal('::1', smtp.port)).message).toMatch(
      /^email\.send refused: Target ::1 is a loopback address/,
    );
    expect((await refusal('169.254.169.254', 25)).message).toMatch(/cloud metadata address/);
    expect(smtp.handshakes()).toBe(0);
    expect(smtp.logins).toEqual([]);
    expect(smtp.messages).toEqual([]);
  });
});
