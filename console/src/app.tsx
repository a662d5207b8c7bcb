/**
 * The console's shell: who is signed in (`GET /api/v1/me`), the header with its navigation and
 * the `Sign out` button, and the pages by path. A 401 from any request (the session expired, was
 * signed out elsewhere, or its human was deleted) signs the console out and shows the sign-in
 * page, saying why.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { LocationProvider, Route, Router, useLocation } from 'preact-iso';
import { api, ApiError, onSessionEnded, setCsrfToken } from './api.ts';
import type { Me } from './types.ts';
import { ConnectPage } from './pages/connect.tsx';
import { InboxPage } from './pages/inbox.tsx';
import { NotFoundPage } from './pages/not-found.tsx';
import { OperatorPage } from './pages/operator.tsx';
import { SignInPage } from './pages/sign-in.tsx';
import { TeamPage } from './pages/team.tsx';
import { ThreadPage } from './pages/thread.tsx';
import { SessionContext, type SessionState } from './session.ts';
import { closePersonEvents } from './live.ts';

/** The app: the location provider around the signed-in shell. */
// Links the app routes itself: its own pages. Others (the sign-in redirects of the server,
// /sign-in/oidc) are left to the browser, which must really go there.
const consolePaths = /^\/(?:$|[?#]|inbox|threads\/|teams\/|connect|operator|sign-in(?:$|[?#]))/;

/** The paths of the console's pages (as service/http/console-assets.ts lists them): any other shows "Not found". */
const pagePaths = /^\/(?:|sign-in|inbox|connect|threads\/[^/]+|teams\/[^/]+)\/?$/;

export function App() {
  return (
    <LocationProvider scope={consolePaths}>
      <Shell />
    </LocationProvider>
  );
}

function Shell() {
  const location = useLocation();
  const [state, setState] = useState<SessionState>({ status: 'loading' });
  const [ended, setEnded] = useState(false);

  const load = async () => {
    try {
      const me = await api.me();
      setCsrfToken(me.csrf_token);
      setState({ status: 'signed-in', me });
    } catch (error) {
      setCsrfToken(undefined);
      setState({ status: 'signed-out', error: error instanceof ApiError && error.status !== 401 ? error.message : undefined });
    }
  };

  useEffect(() => {
    // The operator's page has a session of its own (contract §10): no person's session is asked for there.
    if (location.path.startsWith('/operator')) return;
    if (state.status === 'loading') void load();
  }, [location.path]);

  useEffect(
    () =>
      onSessionEnded(() => {
        if (location.path.startsWith('/operator')) return;
        setCsrfToken(undefined);
        closePersonEvents();
        setState((previous) => {
          if (previous.status === 'signed-in') setEnded(true);
          return { status: 'signed-out' };
        });
      }),
    [location.path],
  );

  if (location.path.startsWith('/operator')) return <OperatorPage />;
  if (state.status === 'loading') return <Loading />;
  if (state.status === 'signed-out') {
    // An address that is no page of the console says so, signed in or not (the server answered it 404).
    if (!pagePaths.test(location.path)) {
      return (
        <main id="main" class="centered">
          <NotFoundPage signedOut />
        </main>
      );
    }
    return <SignInPage sessionEnded={ended} />;
  }

  const signOut = async () => {
    try {
      await api.signOut();
    } catch {
      // Signed out already: the same outcome.
    }
    setCsrfToken(undefined);
    closePersonEvents();
    setEnded(false);
    setState({ status: 'signed-out' });
    location.route('/sign-in');
  };

  return (
    <SessionContext.Provider value={{ me: state.me, reload: load }}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <Header me={state.me} onSignOut={signOut} />
      <main id="main" tabIndex={-1}>
        <Router onRouteChange={() => focusHeading()}>
          <Route path="/" component={InboxPage} />
          <Route path="/inbox" component={InboxPage} />
          <Route path="/sign-in" component={InboxPage} />
          <Route path="/threads/:id" component={ThreadPage} />
          <Route path="/teams/:id" component={TeamPage} />
          <Route path="/connect" component={ConnectPage} />
          <Route default component={NotFoundPage} />
        </Router>
      </main>
    </SessionContext.Provider>
  );
}

/** After a route change, focus goes to the new page's heading, so a screen reader announces it. */
function focusHeading(): void {
  requestAnimationFrame(() => document.querySelector<HTMLElement>('main h1')?.focus());
}

function Loading() {
  return (
    <main id="main" class="centered">
      <p role="status">Loading…</p>
    </main>
  );
}

function Header({ me, onSignOut }: { me: Me; onSignOut: () => void }) {
  const { path } = useLocation();
  const teams = [...new Map(me.humans.map((h) => [h.team_id, h])).values()];
  const names = [...new Set(me.humans.map((h) => h.name))].join(', ');
  const current = (href: string) => (path === href || (href === '/inbox' && (path === '/' || path.startsWith('/threads/'))) ? 'page' : undefined);
  const menu = useRef<HTMLElement>(null);
  return (
    <header class="top">
      <span class="brand">ACS console</span>
      <nav aria-label="Main" ref={menu}>
        <ul>
          <li>
            <a href="/inbox" aria-current={current('/inbox')}>
              Inbox
            </a>
          </li>
          {teams.map((t) => (
            <li key={t.team_id}>
              <a href={`/teams/${t.team_id}`} aria-current={current(`/teams/${t.team_id}`)}>
                Team {t.team_name}
              </a>
            </li>
          ))}
          <li>
            <a href="/connect" aria-current={current('/connect')}>
              Connect an agent
            </a>
          </li>
        </ul>
      </nav>
      <span class="who">
        Signed in as <strong>{names}</strong>
      </span>
      <button type="button" class="secondary" onClick={onSignOut}>
        Sign out
      </button>
    </header>
  );
}
