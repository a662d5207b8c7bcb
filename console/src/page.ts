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

/** A time as a person reads it: "09:15" today, else "Nov 22, 09:15". */
export function when(iso: string): string {
  const date = new Date(iso);
  const today = new Date();
  const time = date.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
  if (date.toDateString() === today.toDateString()) return time;
  return `${date.toLocaleDateString(undefined, { month: 'short', day: 'numeric' })}, ${time}`;
}
