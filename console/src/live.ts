/**
 * Keeping a page current: `refresh` runs at once, then whenever the session's event stream says
 * something changed in the person's threads (when the server has the stream), and otherwise on a
 * timer while the page is visible.
 */
import { usePolling } from './page.ts';

/** Runs `refresh` now and whenever the person's threads may have changed. */
export function useLiveUpdates(refresh: () => Promise<void>, options: { intervalMs: number }, deps: unknown[] = []): void {
  usePolling(refresh, options.intervalMs, deps);
}
