/**
 * The sign-in page: how a person gets in (a sign-in link from whoever manages their team, or the
 * organization's OpenID Connect provider when the server has one), and why a sign-in failed. It
 * speaks to the person signing in, who asks for a link; how a link is made (`teamctl humans
 * invite`) is for whoever manages the team, in docs/console.md.
 */
import { useEffect, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api } from '../api.ts';
import { usePageTitle } from '../page.ts';

const reasons: Record<string, string> = {
  link_invalid: 'This sign-in link does not work any more: it was used already, it expired, or it was copied incompletely. Ask your operator for a new one.',
  link_not_confirmed: 'The sign-in was not confirmed from the page of its link in this browser. Open the link again and press its Sign in button.',
  oidc_login_expired: 'The sign-in took too long or was started in another browser. Please try again.',
  oidc_failed: 'The identity provider refused the sign-in, or its answer could not be verified. Please try again.',
  oidc_email_unverified: 'The identity provider did not confirm your email address, so you cannot be signed in with it.',
  oidc_no_human: 'No team has a member with your email address. Ask whoever manages your team to add you.',
  oidc_unavailable: 'The identity provider cannot be reached right now. Please try again later.',
};

/** The sign-in page; `sessionEnded` when the console was just signed out by the service (expired or revoked). */
export function SignInPage({ sessionEnded }: { sessionEnded?: boolean }) {
  usePageTitle('Sign in');
  const { query } = useLocation();
  const [options, setOptions] = useState<Awaited<ReturnType<typeof api.signInOptions>> | undefined>();
  useEffect(() => {
    api.signInOptions().then(setOptions, () => setOptions({ oidc: null, operators: false }));
  }, []);
  const error = query.error ? (reasons[query.error] ?? 'The sign-in did not work. Please try again.') : undefined;
  return (
    <main id="main" class="centered">
      <section class="card narrow" aria-labelledby="sign-in-title">
        <h1 id="sign-in-title" tabIndex={-1}>
          Sign in to the ACS console
        </h1>
        {sessionEnded && !error && (
          <p class="notice" role="alert">
            Your session has ended. Sign in again to go on.
          </p>
        )}
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        {options?.oidc && (
          <p>
            <a class="button" href={options.oidc.start_url}>
              Sign in with {hostOf(options.oidc.issuer)}
            </a>
          </p>
        )}
        <p>
          {options?.oidc ? 'Or open' : 'Open'} the sign-in link you were sent and press its <strong>Sign in</strong> button. A link works once and for a limited
          time.
        </p>
        <p>No link, or yours no longer works? Ask your operator — whoever manages your team — to send you a new one.</p>
        {options?.operators && (
          <p class="muted">
            Operators: <a href="/operator">review access requests</a>.
          </p>
        )}
      </section>
    </main>
  );
}

function hostOf(issuer: string): string {
  try {
    return new URL(issuer).host;
  } catch {
    return issuer;
  }
}
