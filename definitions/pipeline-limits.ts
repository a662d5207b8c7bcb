/**
 * The limits of pipelines' constructs, shared by the schema (`pipeline-schema.ts`) and the
 * interpreter. Free of Zod, so the workflow bundle, which imports it, does not carry Zod.
 */

/** Most items a map runs its body for. */
export const MAX_MAP_ITEMS = 1_000;
/** Most iterations of a loop. */
export const MAX_LOOP_ITERATIONS = 100;
/** Most items of a map in flight at once. */
export const MAX_MAP_CONCURRENCY = 100;
/** Most replies a typed reply tries in all (the first one and the re-asks). */
export const MAX_REPLY_ATTEMPTS = 10;

/**
 * How a waiting step learns of its reply (docs/pipelines.md, "Sizing a worker"): `push` — the run
 * waits in the workflow, woken by the organization's webhook through `teamctl worker
 * --events-listen`, and reads the thread when the wait starts and every `reconcileEvery`; `poll`
 * — an activity long-polls the thread for as long as it waits (what every run did before); `auto`
 * — push when the organization has an enabled webhook for `message.created` (and the worker can
 * register the run's threads), else poll. The local engine waits on the event stream instead.
 */
export const WaitModes = { auto: 'auto', push: 'push', poll: 'poll' } as const;
export type WaitMode = (typeof WaitModes)[keyof typeof WaitModes];

/** Default `reconcileEvery` of a step waiting by push: reads of its thread in case a delivery was lost. */
export const DEFAULT_RECONCILE_EVERY = '15m';
/** Shortest `reconcileEvery`: each read is a few history events, so not more often than this. */
export const MIN_RECONCILE_MS = 10_000;
