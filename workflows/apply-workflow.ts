/**
 * The Temporal workflow of `apply`. Activities are proxies (known by type only) under the one
 * retry policy of `retry-policy.ts`; the activities themselves mark 4xx answers other than 429
 * non-retryable and carry a 429 or 503's `Retry-After` as the next retry delay.
 *
 * Changes go in batches of up to `batchSize` (default 40) of one team per activity call
 * (`runSteps`, which retries each step under the same policy) — a new team with its participants
 * and edges in one call, each step naming the ids the steps before it made; a call with room left
 * takes the whole changes of other teams nothing else works on, up to 160 in all
 * (`crossTeamBatches`) — and the live state is
 * read with one call per 100 teams; the calls run as *local* activities: in the worker that runs the workflow, each recorded as one marker event, with no
 * round trip through the server's task queues. Both cut the worker's and the history's cost per
 * change by an order of magnitude (see docs/performance.md). A local activity cut short by a worker crash runs again on the next
 * worker; the activities are idempotent by business key, so that is safe. The worker records
 * local activities' results when its workflow task completes (at the latest every 8 s while they
 * run), so once its plan is made the workflow awaits one regular activity that does nothing
 * (`planRecorded`; runs recorded before the `planBoundary` patch waited on a 1 ms timer, which
 * Temporal's development server fired ~0.8 s late): the reads are then in the history before any
 * change starts, and a crash later replays the same plan rather than making a new one (every
 * change is reported once, an interrupted create as adopted).
 *
 * A large definition does not outgrow Temporal's history limits: once the history holds
 * `historyEventLimit` events (or the server suggests it), the workflow lets the changes in flight
 * finish and continues as new with the same input, carrying the changes made so far; the new run
 * re-reads the live state, so it carries on exactly where the last one stopped.
 */
import { continueAsNew, patched, proxyActivities, proxyLocalActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { ApplyActivities } from '../activities/apply-activities.ts';
import { orchestrateApply } from './apply-orchestration.ts';
import { DEFAULT_TEMPORAL_BATCH_SIZE, DEFAULT_TEMPORAL_CHAINED_BATCH_SIZE, DEFAULT_TEMPORAL_CROSS_TEAM_BATCH_SIZE } from './apply-orchestration.ts';
import type { AppliedChange, ApplyInput, ApplyResult, OutcomeCounts } from './apply-orchestration.ts';
import { jsonBytes } from './payload-bytes.ts';
import { DEFAULT_ACTIVITY_TIMEOUT_SECONDS, temporalRetryPolicy } from './retry-policy.ts';

/**
 * Patch ids (`patched()`): a run started by this code reads the teams in batches
 * (`readTeams`, up to 100 teams a call) and lets a batch of changes hold a team with its
 * participants and edges (`chainedBatches`), records its plan by awaiting an activity instead
 * of a timer (`planBoundary`), and lets a batch hold several teams (`crossTeamBatches`, asked
 * when the first batch is formed); a run recorded before replays as it ran.
 */
export const APPLY_PATCHES = {
  batchedReads: 'apply-batched-team-reads',
  chainedBatches: 'apply-chained-batches',
  planBoundary: 'apply-plan-boundary-activity',
  crossTeamBatches: 'apply-cross-team-batches',
} as const;

/** Default of `ApplyInput.historyEventLimit`: Temporal warns at 10,240 events and stops at 51,200. */
export const DEFAULT_HISTORY_EVENT_LIMIT = 10_000;

/** Most changes listed in a result (or carried into the next run); beyond, they are counted. */
export const MAX_LISTED_CHANGES = 5_000;

/**
 * Most bytes of JSON (UTF-8, `payload-bytes.ts`) the listed changes may take (a change with long
 * instructions is several KB): the result stays under half of Temporal's 2 MB payload limit.
 */
export const MAX_LISTED_BYTES = 1_000_000;

/** `applied` cut to {@link MAX_LISTED_CHANGES} and {@link MAX_LISTED_BYTES}, the rest added to `omitted` by outcome. */
export function listed(applied: AppliedChange[], omitted: OutcomeCounts | undefined): { applied: AppliedChange[]; omitted?: OutcomeCounts } {
  let size = 0;
  let keep = 0;
  while (keep < applied.length && keep < MAX_LISTED_CHANGES) {
    size += jsonBytes(applied[keep]);
    if (size > MAX_LISTED_BYTES) break;
    keep++;
  }
  if (keep === applied.length && !omitted) return { applied };
  const counts: OutcomeCounts = { created: 0, updated: 0, deleted: 0, unchanged: 0, ...omitted };
  for (const change of applied.slice(keep)) counts[change.outcome]++;
  return { applied: applied.slice(0, keep), omitted: counts };
}

/**
 * Applies a definition's desired state. Input: {@link ApplyInput} (secret references only, never
 * values). Output: {@link ApplyResult}, the changes of every run of this apply in plan order.
 * Fails with the first activity's `ApplicationFailure` (its `type` is the stable code).
 */
export async function applyWorkflow(input: ApplyInput): Promise<ApplyResult> {
  const timeoutMs = (input.activityTimeoutSeconds ?? DEFAULT_ACTIVITY_TIMEOUT_SECONDS) * 1000;
  const activities = proxyLocalActivities<ApplyActivities>({ startToCloseTimeout: timeoutMs, retry: temporalRetryPolicy() });
  // A call of several teams gets the time per change that a call of one team had: under a low
  // rate limit its changes are paced, and a call cut short by its timeout starts over.
  const longer = new Map<number, typeof activities>();
  const runSteps: ApplyActivities['runSteps'] = (stepsInput) => {
    const scale = Math.ceil(stepsInput.steps.length / DEFAULT_TEMPORAL_CHAINED_BATCH_SIZE);
    if (scale <= 1) return activities.runSteps(stepsInput);
    let proxy = longer.get(scale);
    if (!proxy) longer.set(scale, (proxy = proxyLocalActivities<ApplyActivities>({ startToCloseTimeout: scale * timeoutMs, retry: temporalRetryPolicy() })));
    return proxy.runSteps(stepsInput);
  };
  // Regular, not local: awaiting it completes the workflow task (see the module comment).
  const planBoundary = proxyActivities<Pick<ApplyActivities, 'planRecorded'>>({ startToCloseTimeout: '1 minute', retry: temporalRetryPolicy() });
  const limit = input.historyEventLimit ?? DEFAULT_HISTORY_EVENT_LIMIT;
  const batchedReads = patched(APPLY_PATCHES.batchedReads);
  const chainedBatches = patched(APPLY_PATCHES.chainedBatches);
  // The SDK's proxy has no own keys to spread: its activities are named one by one.
  const acts = { readOrganization: activities.readOrganization, readTeam: activities.readTeam, readTeams: activities.readTeams, runSteps };
  const result = await orchestrateApply(input, acts, {
    // Local activities' markers reach the history only as workflow tasks complete, so the count
    // of changes started in this pass (at most one marker each) is added to the recorded length.
    shouldPause: (started) => workflowInfo().historyLength + started >= limit || workflowInfo().continueAsNewSuggested,
    // patched() is asked here, when a plan with changes is made, so a run without changes (a
    // no-op) records no patch marker.
    afterPlan: () => (patched(APPLY_PATCHES.planBoundary) ? planBoundary.planRecorded() : sleep(1)),
    batchSize: input.batchSize ?? (chainedBatches ? DEFAULT_TEMPORAL_CHAINED_BATCH_SIZE : DEFAULT_TEMPORAL_BATCH_SIZE),
    batchedReads,
    chainedBatches,
    // Asked when the first batch is formed, after the plan is recorded: a no-op records no marker.
    crossTeamBatchSize: () => (patched(APPLY_PATCHES.crossTeamBatches) ? (input.batchSize ?? DEFAULT_TEMPORAL_CROSS_TEAM_BATCH_SIZE) : undefined),
  });
  const { applied, omitted } = listed([...(input.carried ?? []), ...result.applied], input.carriedOmitted);
  if (!result.complete) return continueAsNew<typeof applyWorkflow>({ ...input, carried: applied, ...(omitted ? { carriedOmitted: omitted } : {}) });
  return { orgId: result.orgId, applied, ...(omitted ? { omitted } : {}) };
}
