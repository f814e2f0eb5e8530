import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { isStoreUnavailable } from '../db/errors.js';
import { AppError } from '../http/errors.js';
import { validationDetails } from './validation.js';

/** Fastify's own failures that are the client's fault, mapped to the contract's codes. */
const FASTIFY_CODES: Record<string, { status: number; code: string; message: string }> = {
  FST_ERR_CTP_BODY_TOO_LARGE: {
    status: 413,
    code: 'PAYLOAD_TOO_LARGE',
    message: 'Request body is too large',
  },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    status: 415,
    code: 'UNSUPPORTED_MEDIA_TYPE',
    message: 'Request body must be application/json',
  },
  FST_ERR_CTP_INVALID_JSON_BODY: {
    status: 400,
    code: 'VALIDATION_ERROR',
    message: 'Request body is not valid JSON',
  },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: {
    status: 400,
    code: 'VALIDATION_ERROR',
    message: 'Invalid Content-Length',
  },
};

/**
 * The one error handler: every error becomes `{code, message, details?}`. A 5xx never carries the
 * underlying message or stack; it is logged with the request id instead.
 */
export function handleError(
  error: FastifyError | AppError | Error,
  request: FastifyRequest,
  reply: FastifyReply,
) {
  if (error instanceof AppError) {
    if (error.headers) reply.headers(error.headers);
    return reply
      .status(error.status)
      .send({ code: error.code, message: error.message, ...withDetails(error.details) });
  }
  const fe = error as FastifyError;
  if (fe.validation) {
    const { message, details } = validationDetails(fe.validation, fe.validationContext);
    return reply.status(400).send({ code: 'VALIDATION_ERROR', message, details });
  }
  const known = fe.code ? FASTIFY_CODES[fe.code] : undefined;
  if (known) return reply.status(known.status).send({ code: known.code, message: known.message });
  // JSON.parse failures inside the content-type parser surface as SyntaxError with status 400.
  if (fe instanceof SyntaxError || (fe.statusCode === 400 && /JSON/i.test(fe.message))) {
    return reply.status(400).send({ code: 'VALIDATION_ERROR', message: 'Request body is not valid JSON' });
  }
  if (fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) {
    return reply.status(fe.statusCode).send({ code: 'VALIDATION_ERROR', message: fe.message });
  }
  if (isStoreUnavailable(error)) {
    // The store restarts or the network dropped the connection: the client may retry shortly, and
    // nothing half-done was committed (the transaction rolled back with its connection).
    request.log.warn({ err: error }, 'request failed: the store is unavailable');
    return reply
      .status(503)
      .header('retry-after', '1')
      .send({ code: 'STORE.UNAVAILABLE', message: 'The store is unavailable; retry shortly' });
  }
  request.log.error({ err: error }, 'request failed');
  return reply.status(500).send({ code: 'INTERNAL_ERROR', message: 'Internal server error' });
}

/**
 * Fastify's router rejects some URLs before any route or hook runs (Fastify's `frameworkErrors`);
 * they get the contract's body too, and the request id header the hooks would have set.
 */
export function handleFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const message =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? 'A path parameter is longer than 100 characters'
      : error.code === 'FST_ERR_BAD_URL'
        ? 'The URL path is not valid (malformed percent-encoding)'
        : undefined;
  reply.header('x-request-id', request.id);
  if (message) return reply.status(400).send({ code: 'VALIDATION_ERROR', message });
  request.log.error({ err: error }, 'request failed in the router');
  return reply.status(500).send({ code: 'INTERNAL_ERROR', message: 'Internal server error' });
}

function withDetails(details: Record<string, unknown> | undefined) {
  return details === undefined ? {} : { details };
}

/**
 * Requests Node's HTTP parser refuses before Fastify sees them (a malformed request line or header,
 * a bad Content-Length, headers over 16 KiB, a client too slow to send its request): the contract's
 * body too, written to the socket, which then closes. Fastify's default answers with its own body.
 */
export function handleClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  // A reset connection has nobody left to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, code, message] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'HEADERS_TOO_LARGE', 'Request headers are too large']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'REQUEST_TIMEOUT', 'The request was not received in time']
        : [400, 'VALIDATION_ERROR', 'Malformed HTTP request'];
  const body = JSON.stringify({ code, message });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}
