import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, spawnCli, waitForOutput } from './helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-cli-'));
const dbUrl = `sqlite:${dir}/svc.db`;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('svc command', () => {
  it('--help on every command and subcommand prints its usage and exits 0 without side effects', async () => {
    const quiet = join(dir, 'help');
    const env = { SVC_DATABASE_URL: `sqlite:${quiet}/svc.db`, SVC_DATA_DIR: quiet, PORT: '1' };
    const commands = [
      ['serve'],
      ['worker'],
      ['migrate'],
      ['user', 'create'],
      ['api-key', 'create'],
      ['vault', 'rotate-key'],
    ];
    const runs = await Promise.all(commands.map((c, i) => runCli([...c, i % 2 ? '-h' : '--help'], env)));
    for (const [i, res] of runs.entries()) {
      const name = commands[i].join(' ');
      expect(res.code, name).toBe(0);
      expect(res.stdout, name).toContain(`Usage: svc ${name}`);
      expect(res.stdout, name).toContain('-h, --help');
      expect(res.stderr, name).toBe('');
    }
    // Nothing was created, migrated, listened on or started.
    expect(existsSync(quiet)).toBe(false);
    const userHelp = runs[3].stdout;
    expect(userHelp).toContain('--email <E>');
    expect(userHelp).toContain('[--role <KEY> ...]');
    expect(runs[5].stdout).toContain('Usage: svc vault rotate-key [--new-key <K>] [--new-key-file <PATH>]');

    const [top, version, short, group, groupHelp] = await Promise.all([
      runCli(['--help'], env),
      runCli(['--version'], env),
      runCli(['-v'], env),
      runCli(['user'], env),
      runCli(['vault', '--help'], env),
    ]);
    expect(top.code).toBe(0);
    // Every command on its own line, its summary separated from its name.
    for (const c of commands) expect(top.stdout).toMatch(new RegExp(`\\n  ${c.join(' ')} +\\w`));
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    expect(short.stdout).toBe(version.stdout);
    expect(group.code).toBe(2);
    expect(group.stdout).toContain('svc user create --email <E>');
    expect(groupHelp.code).toBe(0);
    expect(groupHelp.stdout).toContain('svc vault rotate-key');
    expect(existsSync(quiet)).toBe(false);
    expect(readdirSync(dir).filter((f) => f.startsWith('help'))).toEqual([]);
  });

  it('an unknown option is one line pointing at --help', async () => {
    const res = await runCli(['serve', '--bogus'], { SVC_DATABASE_URL: `sqlite:${dir}/never.db` });
    expect(res.code).toBe(1);
    expect(res.stderr.trim()).toBe("svc: Unknown option '--bogus' (see svc --help)");
    expect(existsSync(join(dir, 'never.db'))).toBe(false);
  });

  it('stops a start with one clear line naming a bad variable', async () => {
    const res = await runCli(['serve'], { PORT: 'eighty' });
    expect(res.code).toBe(1);
    expect(res.stderr.trim()).toBe('svc: configuration error: PORT must be an integer >= 0, got "eighty"');
    const bad = await runCli(['serve'], { SVC_DATABASE_URL: 'mysql://x' });
    expect(bad.stderr).toMatch(/^svc: configuration error: SVC_DATABASE_URL must be/);
    const bool = await runCli(['serve'], { SVC_ALLOW_PRIVATE_NETWORKS: 'yes' });
    expect(bool.stderr.trim()).toBe(
      'svc: configuration error: SVC_ALLOW_PRIVATE_NETWORKS must be true or false, got "yes"',
    );
  });

  it('refuses to start in production without the vault key or the JWT secret', async () => {
    const res = await runCli(['serve'], { NODE_ENV: 'production', SVC_VAULT_ENCRYPTION_KEY: '' });
    expect(res.code).toBe(1);
    expect(res.stderr.trim()).toBe(
      'svc: configuration error: SVC_VAULT_ENCRYPTION_KEY is required when NODE_ENV=production',
    );
    const jwt = await runCli(['serve'], { NODE_ENV: 'production', SVC_JWT_SECRET: '' });
    expect(jwt.stderr.trim()).toBe(
      'svc: configuration error: SVC_JWT_SECRET is required when NODE_ENV=production',
    );
  });

  it('the CLI and the bootstrap admin follow the rules POST /user applies, in one line', async () => {
    const email = await runCli(['user', 'create', '--email', 'not an email', '--password', 'long-password'], {
      SVC_DATABASE_URL: `sqlite:${dir}/rules.db`,
    });
    expect(email.code).toBe(1);
    expect(email.stderr.trim()).toBe('svc: email must be an email address');
    const short = await runCli(['user', 'create', '--email', 'short@example.test', '--password', 'abc'], {
      SVC_DATABASE_URL: `sqlite:${dir}/rules.db`,
    });
    expect(short.stderr.trim()).toBe('svc: password must be at least 8 characters');
    const boot = await runCli(['serve'], {
      SVC_BOOTSTRAP_ADMIN_EMAIL: 'admin@example.test',
      SVC_BOOTSTRAP_ADMIN_PASSWORD: 'x',
    });
    expect(boot.stderr.trim()).toBe(
      'svc: configuration error: SVC_BOOTSTRAP_ADMIN_PASSWORD must be at least 8 characters',
    );
  });

  it('a kept development secret that was truncated stops the start instead of becoming a weak key', async () => {
    const { mkdirSync, writeFileSync } = await import('node:fs');
    const dataDir = join(dir, 'short-secret');
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(join(dataDir, 'jwt-secret.key'), 'x\n');
    const res = await runCli(['serve'], {
      SVC_DATA_DIR: dataDir,
      SVC_DATABASE_URL: `sqlite:${dir}/short.db`,
      SVC_JWT_SECRET: '',
    });
    expect(res.code).toBe(1);
    expect(res.stderr.trim()).toBe(
      `svc: configuration error: ${join(dataDir, 'jwt-secret.key')} holds a secret shorter than 32 characters; delete it to generate a new one`,
    );
  });

  it('a start the environment prevents (port in use) fails with one line, not a stack', async () => {
    const net = await import('node:net');
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
    const port = (blocker.address() as { port: number }).port;
    try {
      const res = await runCli(['serve'], {
        SVC_DATABASE_URL: `sqlite:${dir}/port.db`,
        PORT: String(port),
        SVC_WORKER: 'off',
      });
      expect(res.code).toBe(1);
      expect(res.stderr.trim()).toMatch(
        /^svc: cannot start: listen EADDRINUSE: address already in use 127\.0\.0\.1:\d+$/,
      );
    } finally {
      blocker.close();
    }
  });

  it('migrates idempotently: a second run (or a second start) finds nothing to do', async () => {
    const first = await runCli(['migrate'], { SVC_DATABASE_URL: dbUrl });
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^applied: 0001_events, 0002_identity/);
    const second = await runCli(['migrate'], { SVC_DATABASE_URL: dbUrl });
    expect(second.code).toBe(0);
    expect(second.stdout.trim()).toBe('migrations are up to date');
  });

  it('two processes migrating one new SQLite file at once: both succeed, one applies everything', async () => {
    for (let round = 0; round < 3; round++) {
      const url = `sqlite:${dir}/race-${round}.db`;
      const [a, b] = await Promise.all([
        runCli(['migrate'], { SVC_DATABASE_URL: url }),
        runCli(['migrate'], { SVC_DATABASE_URL: url }),
      ]);
      expect([a.code, b.code], `${a.stderr}${b.stderr}`).toEqual([0, 0]);
      const outputs = [a.stdout.trim(), b.stdout.trim()].sort();
      expect(outputs[0]).toMatch(/^applied: 0001_events, /);
      expect(outputs[1]).toBe('migrations are up to date');
    }
  });

  it('creates a user and an API key from the command line', async () => {
    const user = await runCli(
      ['user', 'create', '--email', 'ops@example.test', '--password', 'long-password', '--role', 'admin'],
      {
        SVC_DATABASE_URL: dbUrl,
      },
    );
    expect(user.code).toBe(0);
    expect(JSON.parse(user.stdout)).toMatchObject({ email: 'ops@example.test' });
    expect(user.stdout).not.toContain('long-password');
    const key = await runCli(
      [
        'api-key',
        'create',
        '--email',
        'ops@example.test',
        '--name',
        'deploy',
        '--scope',
        'vault:read',
        '--scope',
        'auth:api_key',
      ],
      { SVC_DATABASE_URL: dbUrl },
    );
    expect(key.code).toBe(0);
    expect(JSON.parse(key.stdout)).toMatchObject({
      name: 'deploy',
      scope_keys: ['auth:manage', 'vault:read'],
    });
    expect(JSON.parse(key.stdout).token).toMatch(/^svc_key_[0-9A-Za-z]{43}$/);
    const dup = await runCli(
      ['user', 'create', '--email', 'ops@example.test', '--password', 'long-password'],
      { SVC_DATABASE_URL: dbUrl },
    );
    expect(dup.code).toBe(1);
    expect(dup.stderr.trim().split('\n').at(-1)).toBe('svc: A user with this email already exists');
    // Both commands print a refusal the same way: one line with its message.
    const unknown = await runCli(
      ['api-key', 'create', '--email', 'ops@example.test', '--name', 'x', '--scope', 'no:such'],
      { SVC_DATABASE_URL: dbUrl },
    );
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trim().split('\n').at(-1)).toBe('svc: Unknown scope "no:such"');
  });

  it('svc worker says in its start-up line that SVC_HEAP_GROWING_PERCENT=0 left V8 its choice', async () => {
    const child = spawnCli(['worker'], {
      SVC_DATABASE_URL: `sqlite:${dir}/worker.db`,
      SVC_HEAP_GROWING_PERCENT: '0',
    });
    try {
      const line = await waitForOutput(child, /worker started/);
      expect(line).toContain("(store: sqlite, heap growth: V8's choice)");
    } finally {
      const exited = new Promise((resolve) => child.on('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
  });

  it('serves, says where it listens, bootstraps the admin, and shuts down cleanly on SIGTERM', async () => {
    const child = spawnCli(['serve'], {
      SVC_DATABASE_URL: dbUrl,
      PORT: '0',
      SVC_BOOTSTRAP_ADMIN_EMAIL: 'root@example.test',
      SVC_BOOTSTRAP_ADMIN_PASSWORD: 'root-password',
    });
    let output = '';
    child.stdout?.on('data', (d) => (output += d));
    const line = await waitForOutput(child, /listening on/);
    const address = /listening on (http:\/\/[^ ]+)/.exec(line)![1];
    // SVC_WORKER unset (auto) on a SQLite file: a worker thread wherever there is a second core.
    expect(line).toContain(availableParallelism() >= 2 ? 'worker: worker thread' : 'worker: in-process');
    // SVC_HEAP_GROWING_PERCENT unset: V8's growing factor fixed at 2 (src/app/heap.ts).
    expect(line).toContain('heap growth: 100%)');
    expect((await fetch(`${address}/healthz`)).status).toBe(200);
    const login = await fetch(`${address}/api/v1/auth/login/credentials`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'root@example.test', password: 'root-password' }),
    });
    expect(login.status).toBe(200);
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    const clean = waitForOutput(child, /shut down cleanly/);
    child.kill('SIGTERM');
    await clean;
    expect(await exited).toBe(0);
    // One listening line; the probe logged nothing at info, the sign-in one line.
    const lines = output
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { msg: string; path?: string });
    expect(lines.filter((l) => /listening/i.test(l.msg))).toHaveLength(1);
    expect(lines.filter((l) => l.msg === 'request').map((l) => l.path)).toEqual([
      '/api/v1/auth/login/credentials',
    ]);
  });
});
