import type { IncomingHttpHeaders } from 'node:http';
import { AppError } from '../../http/errors.js';

/** Events one batch request may carry. */
export const MAX_BATCH = 100;

const mediaType = (header: string | undefined) => (header ?? '').split(';', 1)[0].trim().toLowerCase();
const isJson = (type: string) => type === 'application/json' || type.endsWith('+json');

/**
 * The CloudEvents HTTP protocol binding 1.0 (docs/events.md "Publishing events"), what a request to
 * POST /event carries:
 * - batched mode: `application/cloudevents-batch+json`, a JSON array of 1 to 100 events;
 * - structured mode: `application/cloudevents+json` (or plain `application/json` without ce- headers);
 * - binary mode: a `ce-specversion` header; the context attributes are `ce-*` headers
 *   (percent-decoded), the body is the data and Content-Type its datacontenttype: JSON types give
 *   `data` as JSON, `text/*` a string, anything else `data_base64`.
 * The events themselves are checked by the service.
 */
export function eventsOfRequest(
  headers: IncomingHttpHeaders,
  body: unknown,
): { list: unknown[]; batch: boolean } {
  const type = mediaType(headers['content-type']);
  if (type === 'application/cloudevents-batch+json') {
    if (!Array.isArray(body))
      throw invalid('a batch (application/cloudevents-batch+json) is a JSON array of events');
    if (body.length === 0 || body.length > MAX_BATCH)
      throw invalid(`a batch holds 1 to ${MAX_BATCH} events, this one ${body.length}`);
    return { list: body, batch: true };
  }
  if (type === 'application/cloudevents+json') return { list: [body], batch: false };
  if (headers['ce-specversion'] !== undefined) return { list: [binaryEvent(headers, body)], batch: false };
  if (type === 'application/json') return { list: [body], batch: false };
  throw invalid(
    'send a CloudEvent as application/cloudevents+json (or application/json), a batch as ' +
      'application/cloudevents-batch+json, or the data with ce-specversion, ce-id, ce-source and ce-type headers',
  );
}

function binaryEvent(headers: IncomingHttpHeaders, body: unknown): Record<string, unknown> {
  const event: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!name.startsWith('ce-') || value === undefined) continue;
    const text = Array.isArray(value) ? value.join(',') : value;
    event[name.slice(3)] = percentDecoded(text);
  }
  const contentType = headers['content-type'];
  const type = mediaType(contentType);
  if (contentType) event.datacontenttype = contentType;
  const bytes = Buffer.isBuffer(body) ? body : undefined;
  if (body === undefined || (bytes && bytes.length === 0)) return event;
  if (!bytes)
    event.data = body; // application/json: parsed already
  else if (isJson(type)) {
    try {
      event.data = JSON.parse(bytes.toString('utf8'));
    } catch {
      throw invalid(`the body is not the JSON its Content-Type ${type} says`);
    }
  } else if (type.startsWith('text/')) event.data = bytes.toString('utf8');
  else event.data_base64 = bytes.toString('base64');
  return event;
}

/** Header values are percent-encoded where they hold characters a header cannot (binding §3.1.3.2). */
function percentDecoded(value: string): string {
  if (!value.includes('%')) return value;
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

const invalid = (message: string) => new AppError('EVENT.INVALID', `POST /event: ${message}`);
