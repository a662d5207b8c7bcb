/** Where an activity body runs: under Temporal (heartbeats, cancellation) or called directly by the local engine. */
import { asyncLocalStorage, type Context } from '@temporalio/activity';

/**
 * The running activity's context, or undefined when called outside an activity (the local engine,
 * tests). Read from the SDK's async-local storage rather than `Context.current()`, which throws
 * outside an activity: a thrown error's stack trace cost the local engine ~25 µs per change.
 */
export function activityContext(): Context | undefined {
  return asyncLocalStorage.getStore();
}
