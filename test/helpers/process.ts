import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TEST_SECRETS } from './secrets.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * A real `svc serve` or `svc worker` process (the CLI under tsx, in one process so its pid is svc's),
 * for tests about processes: crashes, restarts, lost connections. Output is kept for assertions.
 */
export class SvcProcess {
  readonly child: ChildProcess;
  output = '';
  address = '';
  private readonly dataDir = mkdtempSync(join(tmpdir(), 'svc-proc-'));

  constructor(
    readonly role: 'serve' | 'worker',
    databaseUrl: string,
    env: Record<string, string> = {},
    /** `built`: run dist/cli/svc.js as users do (npm run build first); `source` (default): src under tsx. */
    entry: 'source' | 'built' = 'source',
  ) {
    const args = entry === 'built' ? ['dist/cli/svc.js', role] : ['--import', 'tsx', 'src/cli/svc.ts', role];
    this.child = spawn(process.execPath, args, {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        NODE_ENV: 'test',
        SVC_DATABASE_URL: databaseUrl,
        SVC_DATA_DIR: this.dataDir,
        SVC_LOG_LEVEL: 'info',
        SVC_PASSWORD_HASH_COST: '10',
        PORT: '0',
        // A diagnostic hook: e.g. SVC_CHILD_NODE_OPTIONS='--import ./trace.mjs' to instrument the child.
        ...(process.env.SVC_CHILD_NODE_OPTIONS ? { NODE_OPTIONS: process.env.SVC_CHILD_NODE_OPTIONS } : {}),
        ...TEST_SECRETS,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const collect = (chunk: Buffer) => {
      this.output += chunk;
      if (!this.address) {
        const m = /listening on (http:\/\/[^ ]+)/.exec(this.output);
        if (m) this.address = m[1];
      }
    };
    this.child.stdout!.on('data', collect);
    this.child.stderr!.on('data', collect);
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** `locked_by` of this process's claims (outbox, runs, deliveries) starts with this. */
  get lockPrefix(): string {
    return `${hostname()}/${this.pid}/`;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Resolves once the process serves (serve) or its drain listens for NOTIFY (worker, on PostgreSQL). */
  async ready(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const mark = this.role === 'serve' ? 'listening on' : 'worker started';
    while (!this.output.includes(mark)) {
      if (!this.alive) throw new Error(`svc ${this.role} exited early:\n${this.output}`);
      if (Date.now() > deadline) throw new Error(`svc ${this.role} not ready in time:\n${this.output}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /**
   * Resolves once `text` appeared in the output (e.g. the drain's "listening for notifications"),
   * from character `since` on (`output.length` before an action: what it made the process say).
   */
  async said(text: string, timeoutMs = 60_000, since = 0): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.output.includes(text, since)) {
      if (!this.alive) throw new Error(`svc ${this.role} exited before saying "${text}":\n${this.output}`);
      if (Date.now() > deadline)
        throw new Error(`svc ${this.role} did not say "${text}" in time:\n${this.output}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async stop(): Promise<void> {
    if (this.alive) {
      const exited = new Promise((resolve) => this.child.once('exit', resolve));
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}
