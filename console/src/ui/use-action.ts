import { useState } from 'preact/hooks';

/**
 * An action a user starts (save, retry, revoke): its error kept for display and cleared when the next
 * one starts. `run` answers whether the action succeeded.
 */
export function useAction(): [error: unknown, run: (work: () => Promise<unknown>) => Promise<boolean>] {
  const [error, setError] = useState<unknown>(null);
  const run = async (work: () => Promise<unknown>) => {
    setError(null);
    try {
      await work();
      return true;
    } catch (err) {
      setError(err);
      return false;
    }
  };
  return [error, run];
}
