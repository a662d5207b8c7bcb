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
