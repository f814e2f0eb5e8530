import type { FastifyRequest } from 'fastify';
import type { RequestMeta } from './sign-in.js';

/** Where a request came from, recorded on sessions and refresh tokens (routes only: it reads HTTP). */
export function requestMeta(req: FastifyRequest): RequestMeta {
  const ua = req.headers['user-agent'];
  return { ip: req.ip ?? null, userAgent: typeof ua === 'string' ? ua.slice(0, 512) : null };
}
