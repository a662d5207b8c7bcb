/** The exit codes of `teamctl` (a module of their own: every command needs them, few need `errors.ts`). */

/** Exit codes of `teamctl`. */
export const ExitCodes = {
  /** Success; for `plan --detailed-exitcode`: in sync. */
  ok: 0,
  /** Any error. */
  error: 1,
  /** `plan --detailed-exitcode`: the plan has changes. */
  changes: 2,
  /** A wait ran out of time (`thread open --wait` got no reply). */
  timedOut: 4,
} as const;
export type ExitCode = (typeof ExitCodes)[keyof typeof ExitCodes];
