import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyReply } from 'fastify';
import type { App } from '../http/app.js';
import { AppError } from '../http/errors.js';

/** src/app and dist/app are both two levels below the package root. */
const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const DEFAULT_CONSOLE_DIR = join(PACKAGE_ROOT, 'dist', 'console');

/**
 * The page's only sources are svc's own files and the API on the same origin: no inline script or
 * style, no framing, no other host (docs/console.md).
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * Serves the built console (console/, built by `npm run build` into dist/console) at /console/:
 * hashed assets for a year, immutable; every other path is the page itself (the console routes in
 * the browser), never cached, so a new build is picked up at once. Files are sent pre-compressed
 * (brotli or gzip, made at build) when the browser accepts it.
 */
export async function registerConsole(app: App, dir = DEFAULT_CONSOLE_DIR): Promise<void> {
  const root = resolve(dir);
  // cacheControl off: the headers below decide (the page never cached, hashed assets for a year).
  await app.register(fastifyStatic, { root, serve: false, preCompressed: true, cacheControl: false });
  const built = () => existsSync(join(root, 'index.html'));
  const headers = (reply: FastifyReply, cache: string) =>
    reply
      .header('content-security-policy', CONSOLE_CSP)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('cache-control', cache);
  const page = (reply: FastifyReply) => {
    if (!built()) throw new AppError('NOT_FOUND', 'The console is not built here: run `npm run build`');
    return headers(reply, 'no-cache').sendFile('index.html');
  };
  const config = { access: { kind: 'public' as const } };
  const schema = { hide: true };

  app.get('/console', { schema, config }, async (_req, reply) => reply.redirect('/console/', 301));
  app.get<{ Params: { '*': string } }>('/console/assets/*', { schema, config }, async (req, reply) =>
    headers(reply, 'public, max-age=31536000, immutable').sendFile(join('assets', req.params['*'])),
  );
  app.get('/console/*', { schema, config }, async (_req, reply) => page(reply));
}
