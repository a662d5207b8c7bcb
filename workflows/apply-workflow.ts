/**
 * The Temporal workflow of `apply`. Activities are proxies (known by type only); retries follow
 * Temporal's policy, with the stable codes of 4xx answers (but 429) marked non-retryable by the
 * activities themselves.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { ApplyActivities } from '../activities/apply-activities.ts';
import { orchestrateApply } from './apply-orchestration.ts';
import type { ApplyInput, ApplyResult } from './apply-orchestration.ts';

const activities = proxyActivities<ApplyActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 10 },
});

/** Applies a definition's desired state (input holds secret references only). */
export async function applyWorkflow(input: ApplyInput): Promise<ApplyResult> {
  return orchestrateApply(input, activities);
}
