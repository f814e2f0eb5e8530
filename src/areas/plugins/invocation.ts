import { AppError } from '../../http/errors.js';
import { maskSecrets } from '../vault/references.js';
import type { LoadedPlugin } from './discovery.js';
import type { ActionContext } from './manifest.js';

/** One plugin action run under its deadline, and its failures as PLUGIN.* errors with secrets masked. */

/** Longest handler error message kept (a stack or a whole response body is not a message). */
const MAX_MESSAGE = 1000;

class InvocationTimeout extends Error {}

/**
 * Runs the handler under `limitMs`: the signal it receives aborts at the limit (or when the caller's
 * does), and the answer is given at that moment even if the handler ignores its signal.
 */
export async function runWithTimeout(
  plugin: LoadedPlugin,
  action: string,
  label: string,
  limitMs: number,
  ctx: Omit<ActionContext, 'signal'> & { signal?: AbortSignal },
): Promise<unknown> {
  const controller = new AbortController();
  const caller = ctx.signal;
  const timer = setTimeout(() => controller.abort(new InvocationTimeout()), limitMs);
  const onCallerAbort = () => controller.abort(caller?.reason);
  if (caller?.aborted) onCallerAbort();
  else caller?.addEventListener('abort', onCallerAbort, { once: true });
  const aborted = new Promise<never>((_, reject) => {
    if (controller.signal.aborted) reject(controller.signal.reason);
    controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true });
  });
  try {
    const running = controller.signal.aborted
      ? aborted
      : plugin.run(action, {
          config: ctx.config,
          input: ctx.input,
          idempotencyKey: ctx.idempotencyKey,
          signal: controller.signal,
          causation: ctx.causation,
        });
    // A handler that settles after the race is lost must not become an unhandled rejection.
    running.catch(() => {});
    aborted.catch(() => {});
    return await Promise.race([running, aborted]);
  } catch (err) {
    const reason = controller.signal.aborted ? controller.signal.reason : undefined;
    if (reason instanceof InvocationTimeout || (reason as Error | undefined)?.name === 'TimeoutError') {
      throw new AppError('PLUGIN.TIMEOUT', `${label} timed out after ${limitMs} ms`, { timeout_ms: limitMs });
    }
    if (controller.signal.aborted) {
      throw new AppError('PLUGIN.INVOCATION_FAILED', `${label} was aborted by its caller`);
    }
    throw err;
  } finally {
    clearTimeout(timer);
    caller?.removeEventListener('abort', onCallerAbort);
  }
}

/**
 * Any failure of an invocation as a PLUGIN.* AppError whose message names the action; neither its
 * message nor its details contain a value resolved from the vault.
 */
export function toPluginError(err: unknown, label: string, secrets: readonly string[]): AppError {
  if (err instanceof AppError) {
    if (err.code.startsWith('PLUGIN.') || err.code.startsWith('VAULT.')) {
      const message = maskSecrets(err.message, secrets);
      const details = maskSecrets(err.details, secrets);
      return message === err.message && details === err.details
        ? err
        : new AppError(err.code, message, details, err.headers);
    }
  }
  const text = err instanceof Error ? err.message : String(err);
  const message = maskSecrets(text || 'unknown error', secrets).slice(0, MAX_MESSAGE);
  return new AppError('PLUGIN.INVOCATION_FAILED', `${label} failed: ${message}`);
}
