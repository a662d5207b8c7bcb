import type { ExitCode } from '../errors.ts';

/** Runs a command's body and records its exit code (the program reports errors in one place). */
export type Runner = (action: () => Promise<ExitCode>) => Promise<void>;
