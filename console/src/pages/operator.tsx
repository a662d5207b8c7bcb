/**
 * The operators' page: sign in with the admin token (an operator session reaches the
 * `/admin/v1` routes only, contract §10) and review access requests: approve (the new
 * organization's first key is shown once) or reject.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, setCsrfToken } from '../api.ts';
import { usePageTitle, when } from '../page.ts';
import type { AccessRequest } from '../types.ts';

type State = { status: 'loading' } | { status: 'signed-out'; error?: string } | { status: 'signed-in' };

export function OperatorPage() {
  usePageTitle('Access requests');
  const [state, setState] = useState<State>({ status: 'loading' });
  useEffect(() => {
    api.operatorSession().then(
      (session) => {
        setCsrfToken(session.csrf_token);
        setState({ status: 'signed-in' });
      },
      () => setState({ status: 'signed-out' }),
    );
  }, []);
  if (state.status === 'loading') {
    return (
      <main id="main" class="centered">
        <p role="status">Loading…</p>
      </main>
    );
  }
  if (state.status === 'signed-out') {
    return <OperatorSignIn error={state.error} onSignedIn={() => setState({ status: 'signed-in' })} onError={(error) => setState({ status: 'signed-out', error })} />;
  }
  const signOut = async () => {
    await api.operatorSignOut().catch(() => {});
    setCsrfToken(undefined);
    setState({ status: 'signed-out' });
  };
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">ACS console · operators</span>
        <span class="who">Signed in as operator</span>
        <button type="button" class="secondary" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        <Review onSessionEnded={() => setState({ status: 'signed-out', error: 'Your operator session has ended. Sign in again.' })} />
      </main>
    </>
  );
}

function OperatorSignIn({ error, onSignedIn, onError }: { error?: string | undefined; onSignedIn: () => void; onError: (message: string) => void }) {
  const [token, setToken] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    try {
      const session = await api.operatorSignIn(token);
      setCsrfToken(session.csrf_token);
      setToken('');
      onSignedIn();
    } catch (e) {
      onError(e instanceof ApiError && e.status === 401 ? 'That admin token is not the server\'s.' : e instanceof ApiError && e.status === 404 ? 'This server has no admin token: operators cannot sign in.' : (e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main id="main" class="centered">
      <section class="card narrow" aria-labelledby="operator-title">
        <h1 id="operator-title" tabIndex={-1}>
          Operator sign-in
        </h1>
        <p>Operators review access requests. Sign in with the server's admin token (ACS_ADMIN_TOKEN).</p>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <form onSubmit={submit}>
          <label for="admin-token">Admin token</label>
          <input id="admin-token" type="password" autoComplete="off" value={token} required onInput={(e) => setToken((e.target as HTMLInputElement).value)} />
          <button type="submit" disabled={busy}>
            Sign in as operator
          </button>
        </form>
        <p class="muted">
          <a href="/sign-in">Team members sign in here.</a>
        </p>
      </section>
    </main>
  );
}

function Review({ onSessionEnded }: { onSessionEnded: () => void }) {
  const [status, setStatus] = useState<'pending' | 'approved' | 'rejected'>('pending');
  const [requests, setRequests] = useState<AccessRequest[] | undefined>();
  const [approved, setApproved] = useState<{ org_name: string; api_key: string } | undefined>();
  const [message, setMessage] = useState('');
  const [error, setError] = useState<string | undefined>();
  const load = async () => {
    try {
      setRequests((await api.accessRequests(status)).access_requests);
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) onSessionEnded();
      else setError((e as Error).message);
    }
  };
  useEffect(() => {
    setRequests(undefined);
    void load();
  }, [status]);
  const act = async (request: AccessRequest, action: 'approve' | 'reject') => {
    setError(undefined);
    try {
      if (action === 'approve') {
        const result = await api.approve(request.request_id);
        setApproved({ org_name: result.organization.org_name, api_key: result.api_key });
        setMessage(`Approved: the organization ${result.organization.org_name} was created.`);
      } else {
        await api.reject(request.request_id);
        setMessage(`Rejected the request of ${request.email}.`);
      }
      await load();
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) onSessionEnded();
      else setError((e as Error).message);
    }
  };
  return (
    <>
      <div class="page-head">
        <h1 tabIndex={-1}>Access requests</h1>
      </div>
      <p role="status" class="visually-hidden">
        {message}
      </p>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {approved && (
        <div class="secret card">
          <h2>First key of {approved.org_name}</h2>
          <p>Give it to the requester over a safe channel: it is shown only once.</p>
          <label for="approved-key">Organization key</label>
          <input id="approved-key" readOnly value={approved.api_key} />
        </div>
      )}
      <label for="request-status">Show</label>
      <select id="request-status" value={status} onChange={(e) => setStatus((e.target as HTMLSelectElement).value as typeof status)}>
        <option value="pending">Pending</option>
        <option value="approved">Approved</option>
        <option value="rejected">Rejected</option>
      </select>
      {requests?.length === 0 && <p>No {status} requests.</p>}
      {requests && requests.length > 0 && (
        <table aria-label={`${status[0]!.toUpperCase()}${status.slice(1)} access requests`}>
          <thead>
            <tr>
              <th scope="col">Email</th>
              <th scope="col">Organization</th>
              <th scope="col">Intended use</th>
              <th scope="col">Asked</th>
              {status === 'pending' && (
                <th scope="col">
                  <span class="visually-hidden">Decision</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {requests.map((r) => (
              <tr key={r.request_id}>
                <td>{r.email}</td>
                <td>{r.org_name}</td>
                <td>{r.intended_use}</td>
                <td>{when(r.created_at)}</td>
                {status === 'pending' && (
                  <td class="actions">
                    <button type="button" aria-label={`Approve ${r.org_name}`} onClick={() => act(r, 'approve')}>
                      Approve
                    </button>
                    <button type="button" class="danger" aria-label={`Reject ${r.org_name}`} onClick={() => act(r, 'reject')}>
                      Reject
                    </button>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
