import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';
import { SvcProcess } from './process.js';
import { freshDatabase } from './store.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export const ADMIN = { email: 'console-admin@example.test', password: 'console-admin-password-1' };

export interface ConsoleServer {
  base: string;
  serve: SvcProcess;
  /** An admin's access token for set-up over the API (never the browser's session). */
  token: string;
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are asserted field by field
  api(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  close(): Promise<void>;
}

/**
 * The console as a user meets it: built from console/ by Vite (into a temporary folder, so a stale
 * dist/ never decides a test), served by a real `svc serve` process with its worker where SVC_WORKER=auto puts it, on a fresh
 * database, with a bootstrap admin.
 */
export async function startConsoleServer(env: Record<string, string> = {}): Promise<ConsoleServer> {
  const outDir = mkdtempSync(join(tmpdir(), 'svc-console-'));
  await build({
    configFile: join(ROOT, 'console/vite.config.ts'),
    logLevel: 'warn',
    build: { outDir, emptyOutDir: true },
  });
  const db = await freshDatabase();
  const serve = new SvcProcess('serve', db.url, {
    SVC_CONSOLE_DIR: outDir,
    SVC_BOOTSTRAP_ADMIN_EMAIL: ADMIN.email,
    SVC_BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password,
    SVC_ALLOW_PRIVATE_NETWORKS: 'true',
    ...env,
  });
  try {
    await serve.ready();
  } catch (err) {
    await serve.stop();
    throw err;
  }
  const base = serve.address;
  const api = async (method: string, path: string, body?: unknown, token?: string) => {
    const res = await fetch(`${base}/api/v1${path}`, {
      method,
      headers: {
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
  const login = await api('POST', '/auth/login/credentials', ADMIN);
  if (login.status !== 200) throw new Error(`admin sign-in: ${login.status} ${JSON.stringify(login.body)}`);
  const token = login.body.access_token as string;
  return {
    base,
    serve,
    token,
    api: (method, path, body) => api(method, path, body, token),
    async close() {
      await serve.stop();
      await db.drop();
      rmSync(outDir, { recursive: true, force: true });
    },
  };
}
