/**
 * What a path that names nothing of the person's shows: the same whether it does not exist or is
 * not theirs. For an address that is no page of the console at all (`what` = `page`), it says so
 * and leads to the inbox, or to the sign-in page when no one is signed in (`signedOut`).
 */
import { usePageTitle } from '../page.ts';

export function NotFoundPage({ what = 'page', signedOut = false }: { what?: string; signedOut?: boolean }) {
  usePageTitle('Not found');
  return (
    <section class="card" aria-labelledby="not-found-title">
      <h1 id="not-found-title" tabIndex={-1}>
        Not found
      </h1>
      {what === 'page' ? (
        <p>
          The console has no page at this address. Check the link you followed, or{' '}
          {signedOut ? <a href="/sign-in">go to the sign-in page</a> : <a href="/inbox">go to your inbox</a>}.
        </p>
      ) : (
        <p>
          There is no such {what} among yours. It may have been deleted, or it belongs to a team you are not in. <a href="/inbox">Back to the inbox</a>
        </p>
      )}
    </section>
  );
}
