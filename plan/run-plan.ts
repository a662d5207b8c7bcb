/**
 * The changes one apply (or destroy) makes over the live state: the plan of `plan.ts` (or
 * `destroy.ts`) narrowed to the `--target`/`--exclude` selection. Pure; shared by the
 * orchestration (`workflows/apply-orchestration.ts`), the CLI's plan, and the read activity that
 * tells a workflow the live state already matches (`activities/apply-activities.ts`).
 */
import { destroyPlan } from './destroy.ts';
import { computePlan } from './plan.ts';
import { selectChanges } from './selection.ts';
import type { Change, DesiredState, ObservedState } from './types.ts';

/** What an apply plans from: the desired state, the selection, and whether it destroys. */
export interface PlanRequest {
  desired: DesiredState;
  /** `--target` addresses (`plan/addresses.ts`). */
  targets?: string[] | undefined;
  /** `--exclude` addresses. */
  excludes?: string[] | undefined;
  /** `teamctl destroy`: the plan deletes instead of making the definition true. */
  destroy?: boolean | undefined;
}

/** The changes `request` makes over `observed`, in plan order. Raises nothing. */
export function runPlan(request: PlanRequest, observed: ObservedState): Change[] {
  const selection = { targets: request.targets, excludes: request.excludes };
  if (request.destroy) return destroyPlan(request.desired, observed, selection);
  return selectChanges(computePlan(request.desired, observed).changes, selection).changes;
}
