/** Where an activity body runs: under Temporal (heartbeats, cancellation) or called directly by the local engine. */
import { Context } from '@temporalio/activity';

/** The running activity's context, or undefined when called outside an activity (the local engine, tests). */
export function activityContext(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined;
  }
}
