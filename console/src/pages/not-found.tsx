/** What a path that names nothing of the person's shows: the same whether it does not exist or is not theirs. */
import { usePageTitle } from '../page.ts';

export function NotFoundPage({ what = 'page' }: { what?: string }) {
  usePageTitle('Not found');
  return (
    <section class="card" aria-labelledby="not-found-title">
      <h1 id="not-found-title" tabIndex={-1}>
        Not found
      </h1>
      <p>
        There is no such {what} among yours. It may have been deleted, or it belongs to a team you are not in. <a href="/inbox">Back to the inbox</a>
      </p>
    </section>
  );
}
