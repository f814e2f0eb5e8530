import type { Dispatcher } from 'undici';
import { AppError } from '../../../http/errors.js';
import { causationHeaders } from '../../../lib/causation.js';
import {
  assertAllowedUrl,
  ForbiddenTargetError,
  type GuardOptions,
  guardedDispatcher,
} from '../../../lib/net-guard.js';
import { safeUrl } from '../../../lib/tracing.js';
import { undici } from '../../../lib/undici.js';
import { VERSION } from '../../../version.js';
import { BodyTooLargeError, readCapped } from '../http-body.js';
import type { PluginModule } from '../manifest.js';

/** Largest response body kept, unless the instance sets a smaller max_response_bytes. */
export const HTTP_MAX_RESPONSE_BYTES = 10 * 1024 * 1024;
const DEFAULT_RESPONSE_BYTES = 1024 * 1024;
const TIMEOUT_SECONDS = 30;
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

interface HttpConfig {
  base_url?: string;
  headers?: Record<string, string>;
  max_response_bytes?: number;
}

interface HttpInput {
  method: string;
  url: string;
  headers?: Record<string, string>;
  query?: Record<string, string | number | boolean>;
  body?: unknown;
  timeout_ms?: number;
  fail_on_status?: Array<number | '4xx' | '5xx'>;
}

/** Statuses that fail the attempt unless the input says otherwise: the server's errors and "try later". */
const DEFAULT_FAIL_ON: NonNullable<HttpInput['fail_on_status']> = ['5xx', 429, 408];
/** How much of a failing answer the error keeps. */
const ERROR_BODY_CHARS = 1024;
const ERROR_HEADERS_CHARS = 1024;

const StringMap = { type: 'object', additionalProperties: { type: 'string' } };

/**
 * `http` (docs/plugins.md "http: one HTTP request"): one HTTP request per invocation. Targets follow the webhooks' SSRF policy
 * through net-guard (https and public addresses only unless SVC_ALLOW_PRIVATE_NETWORKS), redirects
 * are answered, never followed, and the response body is capped.
 */
export function httpPlugin(network: GuardOptions): PluginModule {
  let dispatcher: Dispatcher | undefined;
  return {
    manifest: {
      name: 'http',
      version: VERSION,
      instance_config_schema: {
        type: 'object',
        properties: {
          base_url: {
            type: 'string',
            format: 'uri',
            description: 'Relative request URLs resolve against it',
          },
          headers: { ...StringMap, description: 'Sent with every request; the request headers win' },
          max_response_bytes: { type: 'integer', minimum: 1, maximum: HTTP_MAX_RESPONSE_BYTES },
        },
        additionalProperties: false,
      },
      actions: [
        {
          name: 'request',
          title: 'HTTP request',
          description:
            'Sends one HTTP request and answers {status, headers, body}; a JSON response body is parsed, ' +
            'others are text; redirects are answered, not followed. A status listed in fail_on_status ' +
            '(default 5xx, 429, 408) fails the attempt with PLUGIN.UPSTREAM_STATUS (so a retry_policy ' +
            'retries it, after Retry-After when the server sends one); other statuses are answers.',
          input_schema: {
            type: 'object',
            required: ['method', 'url'],
            properties: {
              method: { type: 'string', enum: METHODS },
              url: { type: 'string', minLength: 1, maxLength: 8192 },
              headers: StringMap,
              query: { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean'] } },
              body: {},
              timeout_ms: { type: 'integer', minimum: 1, maximum: TIMEOUT_SECONDS * 1000 },
              fail_on_status: {
                type: 'array',
                description:
                  'Statuses that fail the attempt: codes, or "4xx" / "5xx" for a class. Default ["5xx", 429, 408]; [] fails on none.',
                items: {
                  anyOf: [
                    { type: 'integer', minimum: 100, maximum: 599 },
                    { type: 'string', enum: ['4xx', '5xx'] },
                  ],
                },
                maxItems: 100,
              },
            },
            additionalProperties: false,
          },
          output_schema: {
            type: 'object',
            required: ['status', 'headers', 'body'],
            properties: { status: { type: 'integer' }, headers: StringMap, body: {} },
            additionalProperties: false,
          },
          idempotent: false,
          timeout_seconds: TIMEOUT_SECONDS,
        },
      ],
    },
    handlers: {
      request: async ({ config, input, idempotencyKey, signal, causation }) => {
        const cfg = config as HttpConfig;
        const req = input as HttpInput;
        const target = targetUrl(req, cfg);
        try {
          await assertAllowedUrl(target, network);
        } catch (err) {
          if (err instanceof ForbiddenTargetError) {
            throw new AppError('PLUGIN.INVALID_INPUT', `url is not allowed: ${err.message}`, {
              field: 'url',
              reason: err.reason,
            });
          }
          throw err;
        }
        const headers = mergeHeaders(cfg.headers, req.headers);
        if (idempotencyKey && !('idempotency-key' in headers)) headers['idempotency-key'] = idempotencyKey;
        // The loop guard: a request a run makes carries the run's depth + 1, and svc's API stamps
        // the events it causes with it (always set by svc, whatever the input's headers say).
        Object.assign(headers, causationHeaders(causation));
        let body: string | undefined;
        if (req.body !== undefined) {
          if (req.method === 'GET' || req.method === 'HEAD') {
            throw new AppError('PLUGIN.INVALID_INPUT', `a ${req.method} request cannot have a body`, {
              field: 'body',
            });
          }
          body = typeof req.body === 'string' ? req.body : JSON.stringify(req.body);
          if (typeof req.body !== 'string' && !('content-type' in headers)) {
            headers['content-type'] = 'application/json';
          }
        }
        const limit = Math.min(cfg.max_response_bytes ?? DEFAULT_RESPONSE_BYTES, HTTP_MAX_RESPONSE_BYTES);
        const deadline = req.timeout_ms ? AbortSignal.timeout(req.timeout_ms) : undefined;
        dispatcher ??= guardedDispatcher({ ...network, timeoutMs: TIMEOUT_SECONDS * 1000 });
        try {
          const res = await undici().request(target, {
            method: req.method as Dispatcher.HttpMethod,
            headers,
            body,
            dispatcher,
            signal: deadline ? AbortSignal.any([signal, deadline]) : signal,
          });
          const raw = await readCapped(res.body, limit);
          const answer = {
            status: res.statusCode,
            headers: flattenHeaders(res.headers),
            body: parseBody(raw, res.headers['content-type']),
          };
          if (fails(res.statusCode, req.fail_on_status ?? DEFAULT_FAIL_ON)) throw statusError(req, answer);
          return answer;
        } catch (err) {
          if (err instanceof AppError) throw err;
          if (deadline?.aborted && !signal.aborted) {
            throw new AppError('PLUGIN.TIMEOUT', `request timed out after ${req.timeout_ms} ms`);
          }
          if (err instanceof BodyTooLargeError) {
            throw new AppError('PLUGIN.INVOCATION_FAILED', `http.request failed: ${err.message}`);
          }
          const forbidden = findForbidden(err);
          if (forbidden)
            throw new AppError('PLUGIN.INVOCATION_FAILED', `http.request refused: ${forbidden.message}`);
          throw err;
        }
      },
    },
  };
}

function fails(status: number, failOn: NonNullable<HttpInput['fail_on_status']>): boolean {
  return failOn.some(
    (s) => s === status || (typeof s === 'string' && Number(s[0]) === Math.floor(status / 100)),
  );
}

/**
 * A failing status as an attempt's error: the status, the answer's headers and the start of its body
 * (bounded) in the message the run node keeps, and as details; `retry_after_ms` when the server said
 * when to come back (Retry-After in seconds or as a date), which the engine's retry honours.
 */
function statusError(
  req: HttpInput,
  answer: { status: number; headers: Record<string, string>; body: unknown },
) {
  const body = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
  const shortBody = body && body.length > ERROR_BODY_CHARS ? `${body.slice(0, ERROR_BODY_CHARS)}…` : body;
  const headers = JSON.stringify(answer.headers);
  const shortHeaders =
    headers.length > ERROR_HEADERS_CHARS ? `${headers.slice(0, ERROR_HEADERS_CHARS)}…` : headers;
  const retryAfterMs = retryAfter(answer.headers['retry-after']);
  return new AppError(
    'PLUGIN.UPSTREAM_STATUS',
    `http.request: ${req.method} answered ${answer.status}; headers ${shortHeaders}; body ${shortBody ?? 'empty'}`,
    {
      status: answer.status,
      headers: answer.headers,
      body: shortBody ?? null,
      ...(retryAfterMs === undefined ? {} : { retry_after_ms: retryAfterMs }),
    },
  );
}

/** Retry-After (RFC 9110 §10.2.3): delay-seconds or an HTTP-date; milliseconds from now, never negative. */
export function retryAfter(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * The HTTP attributes of an `http` call's span (docs/observability.md "Spans"): method, URL without
 * userinfo, query or fragment, and the answer's status. `mask` hides vault values (a webhook URL
 * kept as a secret carries its token in its path).
 */
export function httpCallAttributes(
  config: unknown,
  input: unknown,
  output: unknown,
  mask: (text: string) => string,
): Record<string, string | number | undefined> {
  const req = input as Partial<HttpInput>;
  let url: string | undefined;
  try {
    url =
      typeof req.url === 'string'
        ? safeUrl(targetUrl(req as HttpInput, (config ?? {}) as HttpConfig))
        : undefined;
  } catch {
    url = undefined;
  }
  const status = (output as { status?: unknown } | null)?.status;
  return {
    'http.request.method': typeof req.method === 'string' ? req.method : undefined,
    'url.full': url === undefined ? undefined : mask(url),
    'http.response.status_code': typeof status === 'number' ? status : undefined,
  };
}

function targetUrl(req: HttpInput, cfg: HttpConfig): string {
  let url: URL;
  try {
    url = cfg.base_url ? new URL(req.url, cfg.base_url) : new URL(req.url);
  } catch {
    throw new AppError(
      'PLUGIN.INVALID_INPUT',
      cfg.base_url
        ? 'url is not a valid URL (relative URLs resolve against the instance base_url)'
        : 'url must be an absolute URL (the instance has no base_url)',
      { field: 'url' },
    );
  }
  for (const [k, v] of Object.entries(req.query ?? {})) url.searchParams.append(k, String(v));
  return url.toString();
}

/** Header names are case-insensitive: lower-cased, the request's own headers over the instance's. */
function mergeHeaders(...sources: Array<Record<string, string> | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const source of sources) {
    for (const [k, v] of Object.entries(source ?? {})) out[k.toLowerCase()] = v;
  }
  return out;
}

function flattenHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

function parseBody(raw: Buffer, contentType: string | string[] | undefined): unknown {
  if (raw.length === 0) return null;
  const text = raw.toString('utf8');
  const type = String(contentType ?? '').toLowerCase();
  if (/[/+]json\b/.test(type)) {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return text;
}

function findForbidden(err: unknown): ForbiddenTargetError | undefined {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof ForbiddenTargetError) return e;
  }
  return undefined;
}
