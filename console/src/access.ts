import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import { ACCESS } from './api/access';

/**
 * Whether scopes open an operation, by the same rule the server applies (`any` of or `all` of the
 * operation's required scopes; none required: any signed-in caller). The console hides what the API
 * would answer 403.
 */
export function allows(scopes: readonly string[], operation: string): boolean {
  const rule = ACCESS[operation];
  if (rule === undefined) return false;
  if (rule === null) return true;
  const held = new Set(scopes);
  return rule.mode === 'all' ? rule.scopes.every((s) => held.has(s)) : rule.scopes.some((s) => held.has(s));
}

/** The signed-in user's `allows`, for any screen: `useCan()('POST /api/v1/webhook')`. */
export const CanContext = createContext<(operation: string) => boolean>(() => false);
export const useCan = () => useContext(CanContext);
