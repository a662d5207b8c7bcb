/** Small helpers every page uses. */
import { useEffect } from 'preact/hooks';

/** Sets the document's title for the page (screen readers announce it, browser history shows it). */
export function usePageTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} · ACS console`;
  }, [title]);
}

/**
 * Calls `tick` now and then every `ms` while the page is visible (and at once when it becomes
 * visible again), until the component goes away.
 */
export function usePolling(tick: () => void | Promise<void>, ms: number, deps: unknown[] = []): void {
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async () => {
      if (stopped) return;
      if (document.visibilityState === 'visible') {
        try {
          await tick();
        } catch {
          // The page shows its own errors; polling goes on.
        }
      }
      if (!stopped) timer = setTimeout(run, ms);
    };
    const onVisible = () => {
      if (document.visibilityState === 'visible') {
        clearTimeout(timer);
        void run();
      }
    };
    void run();
    document.addEventListener('visibilitychange', onVisible);
    return () => {
      stopped = true;
      clearTimeout(timer);
      document.removeEventListener('visibilitychange', onVisible);
    };
  }, deps);
}

/**
 * A time as a person reads it, in their time zone and `locale` (default: the browser's): "09:15"
 * today, "Nov 22, 09:15" on another day of this year, "Nov 22, 2025, 09:15" in another year.
 * `now` is the reader's present (default: now).
 */
export function when(iso: string, now: Date = new Date(), locale?: string): string {
  const date = new Date(iso);
  const time = date.toLocaleTimeString(locale, { hour: '2-digit', minute: '2-digit' });
  if (date.toDateString() === now.toDateString()) return time;
  const sameYear = date.getFullYear() === now.getFullYear();
  return `${date.toLocaleDateString(locale, { month: 'short', day: 'numeric', ...(sameYear ? {} : { year: 'numeric' }) })}, ${time}`;
}

/** The whole date and time, for a `<time>`'s title: "Saturday, November 22, 2025 at 09:15" (as `locale` writes it). */
export function fullWhen(iso: string, locale?: string): string {
  return new Date(iso).toLocaleString(locale, { dateStyle: 'full', timeStyle: 'short' });
}
