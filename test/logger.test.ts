import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { loggerOptions, redactLine, SECRET_FIELDS } from '../src/app/logger.js';

/** A real pino logger with svc's options, writing lines into an array. */
function capture() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { log: pino(loggerOptions('trace'), sink), lines };
}

describe('log redaction', () => {
  it('replaces every secret-named field, at any depth and of any type, and keeps the line valid JSON', () => {
    const { log, lines } = capture();
    const secret = 'S3cr3t-value';
    log.info(
      {
        password: secret,
        user: { email: 'a@example.com', new_password: secret, nested: { token: secret, keep: 1 } },
        req: { headers: { authorization: `Bearer ${secret}`, 'x-api-key': secret, cookie: secret } },
        res: { headers: { 'set-cookie': [`svc_refresh=${secret}`] } },
        secret: { sealed: secret, count: 3 },
        refresh_token: null,
        mfa_token: 12345,
        list: [{ id_token: secret }, { registration_token: secret }],
        config_json: '{"password":"x"}',
      },
      'signed in',
    );
    expect(lines).toHaveLength(1);
    const line = lines[0]!;
    expect(line).not.toContain(secret);
    expect(line).not.toContain('12345');
    const parsed = JSON.parse(line);
    expect(parsed).toMatchObject({
      msg: 'signed in',
      password: '[REDACTED]',
      user: { email: 'a@example.com', new_password: '[REDACTED]', nested: { token: '[REDACTED]', keep: 1 } },
      req: { headers: { authorization: '[REDACTED]', 'x-api-key': '[REDACTED]', cookie: '[REDACTED]' } },
      res: { headers: { 'set-cookie': '[REDACTED]' } },
      secret: '[REDACTED]',
      refresh_token: '[REDACTED]',
      mfa_token: '[REDACTED]',
      list: [{ id_token: '[REDACTED]' }, { registration_token: '[REDACTED]' }],
      config_json: '[REDACTED]',
    });
  });

  it('redacts an error’s secret-named property and child bindings', () => {
    const { log, lines } = capture();
    const err = Object.assign(new Error('refused'), { access_token: 'tok_abc' });
    log.child({ current_password: 'pw_child' }).error({ err }, 'failed');
    const parsed = JSON.parse(lines[0]!);
    expect(lines[0]).not.toContain('tok_abc');
    expect(lines[0]).not.toContain('pw_child');
    expect(parsed.err).toMatchObject({ message: 'refused', access_token: '[REDACTED]' });
    expect(parsed.current_password).toBe('[REDACTED]');
  });

  it('leaves a line without secret fields as it is, and names that only contain a secret name', () => {
    const { log, lines } = capture();
    log.info({ run_id: 'r1', my_token_count: 2, text: 'the "password": field is named in text' }, 'run done');
    const parsed = JSON.parse(lines[0]!);
    expect(parsed).toMatchObject({
      run_id: 'r1',
      my_token_count: 2,
      text: 'the "password": field is named in text',
    });
    const plain = '{"level":30,"msg":"request completed","responseTime":1.2}\n';
    expect(redactLine(plain)).toBe(plain);
  });

  it('covers every field name it declares', () => {
    for (const name of SECRET_FIELDS) {
      const line = `{"a":{${JSON.stringify(name)}:"v1","b":2},${JSON.stringify(name)}:["v2",{"c":"v3"}],"z":0}\n`;
      const out = redactLine(line);
      expect(out).not.toMatch(/v[123]/);
      expect(JSON.parse(out)).toEqual({ a: { [name]: '[REDACTED]', b: 2 }, [name]: '[REDACTED]', z: 0 });
    }
  });
});
