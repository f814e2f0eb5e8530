import { type JSX, render } from 'preact';
import { useEffect, useLayoutEffect, useState } from 'preact/hooks';
import { allows, CanContext } from './access';
import { whenSignedOut } from './api/client';
import { href, matchRoute, navigate, onLinkClick, useLocation } from './router';
import { ApiKeys } from './screens/ApiKeys';
import { EventType, EventTypes } from './screens/EventTypes';
import { Outbox } from './screens/Outbox';
import { PluginDefinition, PluginInstance, Plugins } from './screens/Plugins';
import { RunScreen } from './screens/Run';
import { Runs } from './screens/Runs';
import { Schedules } from './screens/Schedules';
import { SignIn } from './screens/SignIn';
import { SubscriptionScreen } from './screens/Subscription';
import { Subscriptions } from './screens/Subscriptions';
import { Vault } from './screens/Vault';
import { WebhookDetail } from './screens/WebhookDetail';
import { Webhooks } from './screens/Webhooks';
import { type CurrentUser, currentUser, resume, signOut } from './session';
import './styles.css';

/** Each screen with the operation that opens it: the nav shows only what the user's scopes allow. */
const SCREENS = [
  { path: '/subscriptions', label: 'Subscriptions', needs: 'GET /api/v1/event_subscription' },
  { path: '/runs', label: 'Runs', needs: 'GET /api/v1/workflow_run' },
  { path: '/webhooks', label: 'Webhooks', needs: 'GET /api/v1/webhook' },
  { path: '/vault', label: 'Vault', needs: 'GET /api/v1/vault_entry' },
  { path: '/api-keys', label: 'API keys', needs: 'GET /api/v1/api_key' },
  { path: '/plugins', label: 'Plugins', needs: 'GET /api/v1/plugin_definition' },
  { path: '/schedules', label: 'Schedules', needs: 'GET /api/v1/schedule' },
  { path: '/event-types', label: 'Event types', needs: 'GET /api/v1/event_definition' },
  { path: '/outbox', label: 'Outbox', needs: 'GET /api/v1/event_delivery_task' },
] as const;

type Theme = 'light' | 'dark';
function initialTheme(): Theme {
  const saved = localStorage.getItem('svc-theme');
  if (saved === 'light' || saved === 'dark') return saved;
  return matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

function App() {
  const [user, setUser] = useState<CurrentUser | null | undefined>(undefined);
  const [theme, setTheme] = useState<Theme>(initialTheme);
  const { path, query } = useLocation();
  const load = async () => setUser((await resume()) ? await currentUser() : null);
  useEffect(() => {
    whenSignedOut(() => setUser(null));
    load().catch(() => setUser(null));
  }, []);
  useLayoutEffect(() => {
    document.documentElement.dataset.theme = theme;
    localStorage.setItem('svc-theme', theme);
  }, [theme]);
  // The start page is the first screen the user's scopes open (a navigation, so after rendering).
  useEffect(() => {
    const first = user && SCREENS.find((s) => allows(user.scopes, s.needs));
    if (path === '/' && first) navigate(first.path, true);
  }, [user, path]);

  if (user === undefined) return <p class="muted">Loading…</p>;
  if (user === null) return <SignIn onSignedIn={() => currentUser().then(setUser)} />;

  const can = (operation: string) => allows(user.scopes, operation);
  const screens = SCREENS.filter((s) => can(s.needs));

  return (
    <CanContext.Provider value={can}>
      <a class="skip" href="#content">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href={href('/')}>
          svc
        </a>
        <nav class="main" aria-label="main">
          {screens.map((s) => (
            <a key={s.path} href={href(s.path)} aria-current={path.startsWith(s.path) ? 'page' : undefined}>
              {s.label}
            </a>
          ))}
        </nav>
        <button
          type="button"
          onClick={() => setTheme(theme === 'dark' ? 'light' : 'dark')}
          aria-label="switch theme"
        >
          {theme === 'dark' ? 'Light' : 'Dark'} theme
        </button>
        <span class="muted">{user.email}</span>
        <button type="button" onClick={() => signOut().finally(() => setUser(null))}>
          Sign out
        </button>
      </header>
      <main id="content">
        <Screen path={path} query={query} user={user} />
      </main>
    </CanContext.Provider>
  );
}

/** The console's routes: the first whose pattern matches the path renders. */
type Render = (p: Record<string, string>, query: URLSearchParams, user: CurrentUser) => JSX.Element;
const ROUTES: Array<[string, Render]> = [
  [
    '/subscriptions',
    (_p, _q, user) => <Subscriptions canCreate={allows(user.scopes, 'POST /api/v1/event_subscription')} />,
  ],
  ['/subscriptions/new', () => <SubscriptionScreen id={null} />],
  ['/subscriptions/:id', (p) => <SubscriptionScreen key={p.id} id={p.id} />],
  ['/runs', (_p, query) => <Runs query={query} />],
  ['/runs/:id', (p) => <RunScreen key={p.id} id={p.id} />],
  ['/webhooks', () => <Webhooks />],
  ['/webhooks/:id', (p) => <WebhookDetail key={p.id} id={p.id} />],
  ['/vault', () => <Vault />],
  ['/api-keys', (_p, _q, user) => <ApiKeys scopes={user.scopes} />],
  ['/plugins', () => <Plugins />],
  ['/plugins/definitions/:id', (p) => <PluginDefinition key={p.id} id={p.id} />],
  ['/plugins/instances/:id', (p) => <PluginInstance key={p.id} id={p.id} />],
  ['/schedules', () => <Schedules />],
  ['/event-types', () => <EventTypes />],
  ['/event-types/:type', (p) => <EventType key={p.type} type={p.type} />],
  ['/outbox', () => <Outbox />],
];

function Screen({ path, query, user }: { path: string; query: URLSearchParams; user: CurrentUser }) {
  for (const [pattern, render] of ROUTES) {
    const params = matchRoute(pattern, path);
    if (params) return render(params, query, user);
  }
  if (path === '/') return <p class="muted">Your scopes open none of the console's screens.</p>;
  return (
    <p>
      Nothing here. <a href={href('/')}>Back to the start</a>
    </p>
  );
}

document.addEventListener('click', onLinkClick);
render(<App />, document.getElementById('app') as HTMLElement);
