import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

export interface Async<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/**
 * Loads with `load` whenever `deps` change; `everyMs` reloads on a timer while `keepPolling` says so
 * (live views of runs). An answer that arrives after a newer request started is dropped.
 */
export function useAsync<T>(
  load: () => Promise<T>,
  deps: unknown[],
  poll?: { everyMs: number; keepPolling: (data: T | undefined) => boolean },
): Async<T> {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const generation = useRef(0);
  const run = useCallback(() => {
    const mine = ++generation.current;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => mine === generation.current && setState({ data, loading: false }),
      (error) => mine === generation.current && setState((s) => ({ data: s.data, error, loading: false })),
    );
  }, deps);
  useEffect(run, [run]);
  useEffect(() => {
    if (!poll?.keepPolling(state.data) || state.loading) return;
    const timer = setTimeout(run, poll.everyMs);
    return () => clearTimeout(timer);
  }, [state, run, poll]);
  return { data: state.data, error: state.error, loading: state.loading, reload: run };
}
