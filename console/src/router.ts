import { useEffect, useState } from 'preact/hooks';

/** Paths are the console's own, below /console (e.g. `/runs/abc`); the browser's history holds them. */
const BASE = '/console';

export function currentPath(): string {
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : '/';
  return path === '' ? '/' : path;
}

export function href(path: string): string {
  return BASE + path;
}

export function navigate(path: string, replace = false): void {
  history[replace ? 'replaceState' : 'pushState'](null, '', href(path));
  dispatchEvent(new PopStateEvent('popstate'));
}

/** The console path and query, re-rendered on every navigation. */
export function useLocation(): { path: string; query: URLSearchParams } {
  const [state, setState] = useState(() => ({
    path: currentPath(),
    query: new URLSearchParams(location.search),
  }));
  useEffect(() => {
    const update = () => setState({ path: currentPath(), query: new URLSearchParams(location.search) });
    addEventListener('popstate', update);
    return () => removeEventListener('popstate', update);
  }, []);
  return state;
}

/** `/runs/:id` against `/runs/abc` gives `{ id: 'abc' }`; no match gives null. */
export function matchRoute(pattern: string, path: string): Record<string, string> | null {
  const want = pattern.split('/');
  const got = path.split('/');
  if (want.length !== got.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    if (want[i].startsWith(':')) params[want[i].slice(1)] = decodeURIComponent(got[i]);
    else if (want[i] !== got[i]) return null;
  }
  return params;
}

/** Links inside the console navigate without reloading the page. */
export function onLinkClick(event: MouseEvent): void {
  const a = (event.target as Element).closest('a');
  if (!a || a.target || event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || !url.pathname.startsWith(BASE)) return;
  event.preventDefault();
  navigate(url.pathname.slice(BASE.length) + url.search);
}
