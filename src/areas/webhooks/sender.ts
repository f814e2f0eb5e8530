import type { Dispatcher } from 'undici';
import { ForbiddenTargetError } from '../../lib/net-guard.js';
import { undici } from '../../lib/undici.js';

/** docs/webhooks.md "The attempt log": `response_body` keeps at most the first 4096 characters. */
export const RESPONSE_EXCERPT_CHARS = 4096;

export interface AttemptResult {
  success: boolean;
  httpStatus: number | null;
  responseBody: string | null;
  error: string | null;
  durationMs: number;
}

/**
 * One HTTP attempt: POST the raw body with its signed headers through the guarded dispatcher (no
 * redirects, connected address re-checked). Success is any 2xx within `timeoutMs` (one deadline for
 * connect, headers and the body excerpt). Never throws: every failure becomes `error`.
 */
export async function sendAttempt(
  dispatcher: Dispatcher,
  input: { url: string; headers: Record<string, string>; body: string; timeoutMs: number },
): Promise<AttemptResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const signal = AbortSignal.timeout(input.timeoutMs);
  let status: number | null = null;
  try {
    const res = await undici().request(input.url, {
      method: 'POST',
      headers: input.headers,
      body: input.body,
      dispatcher,
      signal,
    });
    status = res.statusCode;
    const excerpt = await readExcerpt(res.body);
    const success = status >= 200 && status < 300;
    let error: string | null = null;
    if (!success) {
      error =
        status >= 300 && status < 400
          ? `HTTP ${status}: redirects are not followed${res.headers.location ? ` (location: ${String(res.headers.location).slice(0, 500)})` : ''}`
          : `HTTP ${status}`;
    }
    return { success, httpStatus: status, responseBody: excerpt, error, durationMs: elapsed() };
  } catch (err) {
    return {
      success: false,
      httpStatus: status,
      responseBody: null,
      error: describeError(err, input.timeoutMs, signal),
      durationMs: elapsed(),
    };
  }
}

/** Reads up to the excerpt length, then drops the rest (a huge or endless body cannot hold the slot). */
async function readExcerpt(body: Dispatcher.ResponseData['body']): Promise<string> {
  const decoder = new TextDecoder('utf-8', { fatal: false });
  let text = '';
  for await (const chunk of body) {
    text += decoder.decode(chunk as Buffer, { stream: true });
    if (text.length >= RESPONSE_EXCERPT_CHARS) {
      body.destroy();
      return text.slice(0, RESPONSE_EXCERPT_CHARS);
    }
  }
  text += decoder.decode();
  return text.slice(0, RESPONSE_EXCERPT_CHARS);
}

function describeError(err: unknown, timeoutMs: number, signal: AbortSignal): string {
  if (signal.aborted) return `timeout: no complete response within ${timeoutMs} ms`;
  let e = err as (Error & { code?: string; cause?: unknown }) | undefined;
  // undici wraps connector errors; the guard's refusal is the useful part.
  for (let i = 0; e && i < 4; i++) {
    if (e instanceof ForbiddenTargetError) return `forbidden target: ${e.message}`;
    if (!e.cause) break;
    e = e.cause as Error & { code?: string; cause?: unknown };
  }
  const top = err as Error & { code?: string };
  const code = top?.code ?? (e as { code?: string } | undefined)?.code;
  const message = top?.message || String(err);
  return (code ? `${code}: ${message}` : message).slice(0, 1000);
}
