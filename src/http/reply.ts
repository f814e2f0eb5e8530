import type { FastifyReply } from 'fastify';

/**
 * Sends an answer serialised beforehand (one cached per version of what it shows), skipping the
 * route's serialiser: the bytes must be what that serialiser would produce from the same value.
 */
export function sendJsonBytes(reply: FastifyReply, bytes: Buffer): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(bytes);
}
