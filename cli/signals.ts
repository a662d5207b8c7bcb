/**
 * Ending a command on SIGINT (Ctrl-C) or SIGTERM, the same way for every command.
 *
 * A command that does nothing about signals ends at once on either, with the usual status
 * (130 or 143): Node's default. A command that holds something it should end cleanly (a long
 * poll, a worker, a wait for a reply) runs its body through {@link untilStopped}: the first
 * SIGINT or SIGTERM aborts the signal the body got, the body returns (exit 0, or what it
 * decides). A command that is cut short but should say what it left done (`apply`) runs its body
 * through {@link sayingWhenStopped}: the signal still ends it with the usual status, after one
 * line. Nothing here calls `process.exit`.
 *
 * One Ctrl-C may arrive twice: under `npx` (npm → the command) the terminal signals the whole
 * foreground group and npm forwards the signal to its child as well. So a stop signal within
 * {@link SAME_STOP_MS} of the first is the same one; a later one (a second Ctrl-C of an impatient
 * person) ends the process at once, with the usual status.
 */

/** The signals that stop a command. */
export const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const;

/** Within this many ms of the first, a stop signal is that same one delivered twice (see the module's comment). */
export const SAME_STOP_MS = 1_000;

/** Ends the process by `name` as if no handler were there: the default action, the usual status (130, 143). */
function endBy(name: NodeJS.Signals): void {
  for (const signal of STOP_SIGNALS) process.removeAllListeners(signal);
  process.kill(process.pid, name);
}

/**
 * After a first stop signal: later ones within {@link SAME_STOP_MS} are ignored, a later one ends
 * the process at once. The handlers stay for the rest of the process, which is ending.
 */
function afterFirstStop(): void {
  const first = Date.now();
  const again = (name: NodeJS.Signals) => {
    if (Date.now() - first > SAME_STOP_MS) endBy(name);
  };
  for (const name of STOP_SIGNALS) process.on(name, again);
}

/**
 * Runs `body` with an AbortSignal that the first SIGINT or SIGTERM aborts (see the module's
 * comment for a second one). Input: the body, which should stop promptly once the signal is
 * aborted (pass it to requests and waits). Output: what the body returns. Errors: the body's own.
 */
export async function untilStopped<T>(body: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const stop = new AbortController();
  const onSignal = (name: NodeJS.Signals) => {
    // The next handlers first: with no listener left for an instant, Node restores the signal's
    // default action, and the same Ctrl-C delivered a second time (npx) would kill the process.
    afterFirstStop();
    for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
    stop.abort(new Error(`stopped by ${name}`));
  };
  for (const name of STOP_SIGNALS) process.on(name, onSignal);
  try {
    return await body(stop.signal);
  } finally {
    for (const name of STOP_SIGNALS) process.off(name, onSignal);
  }
}

/**
 * Runs `body`; a SIGINT or SIGTERM while it runs calls `say(signal)` (which writes what was done
 * and what to do: one line, synchronously) and then ends the process by that signal, with the
 * usual status. Input: the body and what to say. Output: what the body returns. Errors: the body's.
 */
export async function sayingWhenStopped<T>(body: () => Promise<T>, say: (signal: NodeJS.Signals) => void): Promise<T> {
  let said = false;
  // `on`, not `once`: a once-listener is removed before it runs, and with none left Node restores
  // the default action, so the same Ctrl-C delivered a second time (npx) would end the process
  // before the line is written. A repeat while saying is ignored; then the process ends by it.
  const onSignal = (name: NodeJS.Signals) => {
    if (said) return;
    said = true;
    try {
      say(name);
    } finally {
      endBy(name);
    }
  };
  for (const name of STOP_SIGNALS) process.on(name, onSignal);
  try {
    return await body();
  } finally {
    for (const name of STOP_SIGNALS) process.off(name, onSignal);
  }
}
