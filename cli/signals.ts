/**
 * Ending a command on SIGINT (Ctrl-C) or SIGTERM, the same way for every command.
 *
 * A command that does nothing about signals ends at once on either, with the usual status
 * (130 or 143): Node's default. A command that holds something it should end cleanly (a long
 * poll, a worker, a wait for a reply) runs its body through {@link untilStopped}: the first
 * SIGINT or SIGTERM aborts the signal the body got, the body returns (exit 0, or what it
 * decides), and the handlers are removed again. Nothing here calls `process.exit`.
 */

/** The signals that stop a command. */
export const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const;

/**
 * Runs `body` with an AbortSignal that the first SIGINT or SIGTERM aborts; the handlers live
 * only while `body` runs. Input: the body, which should stop promptly once the signal is aborted
 * (pass it to requests and waits). Output: what the body returns. Errors: the body's own.
 */
export async function untilStopped<T>(body: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const stop = new AbortController();
  const onSignal = (name: NodeJS.Signals) => stop.abort(new Error(`stopped by ${name}`));
  for (const name of STOP_SIGNALS) process.once(name, onSignal);
  try {
    return await body(stop.signal);
  } finally {
    for (const name of STOP_SIGNALS) process.off(name, onSignal);
  }
}
