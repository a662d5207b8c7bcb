/**
 * The orchestration of `apply` and `destroy`, shared by both engines: read the live state,
 * compute the plan (`plan/plan.ts`, or `plan/destroy.ts`), keep what `--target`/`--exclude`
 * select, refuse deletes nobody approved or that would remove a protected resource, then run the changes through the activities as a
 * dependency graph (`plan/dependencies.ts`) — a team's participants after the team is created, an
 * edge after both its participants are, a participant's delete after its edges', everything
 * after the organization — with at most `parallelism` changes in flight, spread across teams so
 * that parallel calls do not queue behind one team's row lock.
 *
 * It knows activities only as types and does no I/O itself, so the Temporal workflow runs it in
 * its sandbox and the local engine runs it in-process, unchanged. It is deterministic: the next
 * change to start depends only on which changes have finished, in the order they finished.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { ApplyActivities, EnsureResult, Step } from '../activities/apply-activities.ts';
import type { Connection } from '../activities/connection.ts';
import { dependencies } from '../plan/dependencies.ts';
import { destroyPlan } from '../plan/destroy.ts';
import { computePlan, knownIds, matchState, participantKey } from '../plan/plan.ts';
import { protectedDeletes, protectionMessage } from '../plan/protection.ts';
import { selectChanges } from '../plan/selection.ts';
import type { Change, CreateChange, DeleteChange, DesiredState, ObservedState, UpdateChange } from '../plan/types.ts';
import { mapBounded } from './bounded.ts';

/** Input of an apply: where the service is (a key *reference*) and the desired state. */
export interface ApplyInput {
  connection: Connection;
  desired: DesiredState;
  /** Most changes (and reads) in flight at once (default {@link DEFAULT_PARALLELISM}). */
  parallelism?: number;
  /**
   * Changes of one team made by one activity call, one after another (default: 1 on the local
   * engine, {@link DEFAULT_TEMPORAL_BATCH_SIZE} on Temporal, where every activity costs the worker
   * and the history a little).
   */
  batchSize?: number;
  /** Temporal only: seconds one activity call (a batch) may run before it is retried (default 300). */
  activityTimeoutSeconds?: number;
  /**
   * Temporal only: once the workflow's history holds this many events, it finishes the changes
   * in flight and continues as new (default 10,000, Temporal's warning threshold).
   */
  historyEventLimit?: number;
  /** Temporal only: the changes earlier runs of this apply carried out before continuing as new. */
  carried?: AppliedChange[];
  /** Temporal only: changes of earlier runs counted but no longer listed (see {@link ApplyResult.omitted}). */
  carriedOmitted?: OutcomeCounts;
  /**
   * The deletes the user consented to: `all` (`--auto-approve`), or the ids of the deletes of the
   * plan they were shown. A plan with any other delete (the live state changed since) is refused,
   * `not_approved`, before any change. Absent: no delete is approved.
   */
  approvedDeletes?: 'all' | string[];
  /** `--target` addresses (`plan/addresses.ts`): only these changes and what they depend on. */
  targets?: string[];
  /** `--exclude` addresses: not these changes, nor what depends on them. */
  excludes?: string[];
  /** `teamctl destroy`: the plan deletes (`plan/destroy.ts`) instead of making the definition true. */
  destroy?: boolean;
}

/** How many changes ended with each outcome. */
export type OutcomeCounts = Record<EnsureResult['outcome'], number>;

/** Default of {@link ApplyInput.parallelism}. */
export const DEFAULT_PARALLELISM = 8;

/** Default of {@link ApplyInput.batchSize} on Temporal. */
export const DEFAULT_TEMPORAL_BATCH_SIZE = 20;

/** The activities the orchestration needs (a subset of {@link ApplyActivities}). */
export type OrchestratedActivities = Pick<ApplyActivities, 'readOrganization' | 'readTeam' | 'runSteps'>;

/** One change as carried out. */
export type AppliedChange = Change & { outcome: EnsureResult['outcome'] };

/** Result of an apply: the organization's id and the changes carried out, in plan order. */
export interface ApplyResult {
  orgId: string;
  applied: AppliedChange[];
  /**
   * Temporal only, for very large applies: changes made but not listed in `applied`, by outcome,
   * so the result stays far below Temporal's 2 MB payload limit.
   */
  omitted?: OutcomeCounts;
}

/** Result of one pass of the orchestration: `complete` is false when it paused with changes left. */
export interface OrchestrationResult extends ApplyResult {
  complete: boolean;
}

/** Called as each change completes (the local engine shows progress with it). */
export type ProgressListener = (change: AppliedChange) => void;

/** Options of {@link orchestrateApply}. */
export interface OrchestrationOptions {
  onProgress?: ProgressListener;
  /**
   * Asked before each change is started, with the number started so far in this pass: true
   * stops starting changes; those in flight finish and the result says `complete: false` (the
   * Temporal workflow then continues as new).
   */
  shouldPause?: (started: number) => boolean;
  /**
   * Awaited once the live state is read and the plan made, before the first change starts (the
   * Temporal workflow records the reads there, so a crash later never re-plans).
   */
  afterPlan?: () => Promise<void>;
  /** Changes per activity call, taken from one team (default 1). */
  batchSize?: number;
  /** Attempts of each change (default: the retry policy's). */
  retry?: { maximumAttempts?: number };
}

/**
 * Reads the live state an apply compares against: the organization, its provider keys, and the
 * graphs of all its teams (those the definition does not name are deleted), read in parallel (at
 * most `limit` at once). `compareProviderKeys` false (destroy) reads the provider keys without
 * resolving the definition's secrets: nothing will be set, so they need not be there.
 */
export async function readObserved(
  acts: Pick<OrchestratedActivities, 'readOrganization' | 'readTeam'>,
  connection: Connection,
  desired: DesiredState,
  limit: number = DEFAULT_PARALLELISM,
  compareProviderKeys = true,
): Promise<ObservedState> {
  const org = await acts.readOrganization({ connection, desired, compareProviderKeys });
  const teams = await mapBounded(org.teams, limit, (team) => acts.readTeam({ connection, teamId: team.team_id }));
  // A read recorded before webhooks were managed has none: they are then left alone (plan/plan.ts).
  return { organization: org.organization, providerKeys: org.providerKeys, teams, ...(org.webhooks ? { webhooks: org.webhooks } : {}) };
}

/**
 * The changes one run makes: the plan of `input` (apply's, or destroy's) over the live state,
 * narrowed to its `--target`/`--exclude` selection. The CLI shows the same plan before asking.
 */
export function planOf(input: Pick<ApplyInput, 'desired' | 'targets' | 'excludes' | 'destroy'>, observed: ObservedState): Change[] {
  const selection = { targets: input.targets, excludes: input.excludes };
  if (input.destroy) return destroyPlan(input.desired, observed, selection);
  return selectChanges(computePlan(input.desired, observed).changes, selection).changes;
}

/**
 * Refuses a plan with a delete the input does not approve (`approvedDeletes`): a non-retryable
 * `not_approved` naming them, before any change is made.
 */
function assertApproved(changes: readonly Change[], approved: ApplyInput['approvedDeletes']): void {
  if (approved === 'all') return;
  const ids = new Set(approved ?? []);
  const refused = changes.filter((c): c is DeleteChange => c.action === 'delete' && !ids.has(c.id));
  if (refused.length === 0) return;
  const what = refused.map((c) => c.address).join(', ');
  const why = approved === undefined ? 'no delete was approved' : 'the live state changed since the plan was approved';
  throw ApplicationFailure.nonRetryable(`the plan deletes ${what}, which was not approved (${why}); nothing was changed`, 'not_approved');
}

/** A change of the plan with what it waits for. */
interface Task {
  index: number;
  change: Change;
  /** The lane it is spread over: its team, or '' for the organization and provider keys. */
  lane: string;
  /** Tasks not yet finished that this one waits for. */
  waitingFor: number;
  /** Tasks that wait for this one. */
  dependents: Task[];
}

/**
 * Runs one apply. Raises the first activity failure after the changes in flight settle; a re-run
 * picks up from the live state, so an interrupted apply converges.
 */
export async function orchestrateApply(input: ApplyInput, acts: OrchestratedActivities, options: OrchestrationOptions = {}): Promise<OrchestrationResult> {
  const { connection, desired } = input;
  const limit = Math.max(1, input.parallelism ?? DEFAULT_PARALLELISM);
  const observed = await readObserved(acts, connection, desired, limit, !input.destroy);
  const changes = planOf(input, observed);
  assertApproved(changes, input.approvedDeletes);
  // The CLI refused these already; the live state may have changed since (or the caller is not the CLI).
  const refused = protectedDeletes(changes.filter((c): c is DeleteChange => c.action === 'delete'), observed);
  if (refused.length > 0) throw ApplicationFailure.nonRetryable(protectionMessage(refused), 'deletion_protected');
  if (changes.length > 0) await options.afterPlan?.();

  // The ids a change needs: known from the live state (by the definition's names: a renamed
  // resource under its new one), or once the create it waits for is done.
  let orgId = observed.organization?.org_id;
  const { teams: teamIds, participants: participantIds } = knownIds(matchState(desired, observed));
  /** An id the dependency graph guarantees is known by now; a missing one is a bug in that graph, not a user error. */
  const known = (id: string | undefined, what: string): string => {
    if (id === undefined) throw new Error(`apply: no id for ${what}: a change started before the create it waits for`);
    return id;
  };
  const organization = () => known(orgId, `organization ${desired.organization.name}`);
  const team = (name: string) => known(teamIds.get(name), `team ${name}`);
  const participant = (teamName: string, name: string) => known(participantIds.get(participantKey(teamName, name)), `participant ${name} of team ${teamName}`);

  const tasks = buildTasks(changes);
  const applied: Array<{ index: number; entry: AppliedChange }> = [];

  /** The call that makes a create, with the ids it needs. */
  function createStep(change: CreateChange): Step {
    switch (change.kind) {
      case 'organization':
        return { op: 'ensure', input: { connection, kind: 'organization', parentId: '', fields: change.fields } };
      case 'provider_key':
        return { op: 'putProviderKey', input: { connection, orgId: organization(), provider: change.name, secretRef: change.secretRef } };
      case 'webhook': {
        const { secret: _sensitive, ...fields } = change.fields;
        return { op: 'ensureWebhook', input: { connection, orgId: organization(), fields, secretRef: change.secretRef } };
      }
      case 'team':
        return { op: 'ensure', input: { connection, kind: 'team', parentId: organization(), fields: change.fields } };
      case 'agent':
        return { op: 'ensure', input: { connection, kind: 'agent', parentId: team(change.team), fields: change.fields } };
      case 'human':
        return { op: 'ensure', input: { connection, kind: 'human', parentId: team(change.team), fields: change.fields } };
      case 'edge': {
        const [a, b] = change.fields.participants;
        const participants: [string, string] = [participant(change.team, a), participant(change.team, b)];
        return { op: 'ensure', input: { connection, kind: 'edge', parentId: team(change.team), fields: { participants } } };
      }
    }
  }

  /** The call that makes an update (a PATCH of the differing fields; a provider key is set again). */
  function updateStep(change: UpdateChange): Step {
    switch (change.kind) {
      case 'organization':
        return { op: 'update', input: { connection, kind: 'organization', id: change.id, patch: change.fields } };
      case 'provider_key':
        return { op: 'putProviderKey', input: { connection, orgId: organization(), provider: change.name, secretRef: change.secretRef } };
      case 'webhook':
        return { op: 'updateWebhook', input: { connection, id: change.id, patch: change.fields, ...(change.secretRef !== undefined ? { secretRef: change.secretRef } : {}) } };
      case 'team':
        return { op: 'update', input: { connection, kind: 'team', id: change.id, patch: change.fields } };
      case 'agent':
        return { op: 'update', input: { connection, kind: 'agent', id: change.id, patch: change.fields } };
      case 'human':
        return { op: 'update', input: { connection, kind: 'human', id: change.id, patch: change.fields } };
    }
  }

  /** The call that makes a delete (idempotent: a resource already gone counts as deleted). */
  function deleteStep(change: DeleteChange): Step {
    switch (change.kind) {
      case 'provider_key':
        return { op: 'deleteProviderKey', input: { connection, orgId: organization(), provider: change.name } };
      case 'webhook':
        return { op: 'deleteWebhook', input: { connection, id: change.id } };
      default:
        return { op: 'remove', input: { connection, kind: change.kind, id: change.id } };
    }
  }

  /** The call that makes `change`. */
  function stepOf(change: Change): Step {
    switch (change.action) {
      case 'create':
        return createStep(change);
      case 'update':
        return updateStep(change);
      case 'delete':
        return deleteStep(change);
    }
  }

  /** Records a made change: its id becomes known to the changes that wait for it. */
  function record(change: Change, index: number, result: EnsureResult): void {
    if (change.action === 'create') {
      if (change.kind === 'organization') orgId = result.id;
      if (change.kind === 'team') teamIds.set(change.name, result.id);
      if (change.kind === 'agent' || change.kind === 'human') participantIds.set(participantKey(change.team, change.name), result.id);
    }
    // PUT cannot tell a new provider key from a replaced one; the plan can.
    const outcome = change.kind === 'provider_key' && change.action === 'create' ? 'created' : result.outcome;
    const entry: AppliedChange = { ...change, outcome };
    applied.push({ index, entry });
    options.onProgress?.(entry);
  }

  /** Makes a batch of changes with one activity call. */
  async function run(batch: Task[]): Promise<void> {
    const results = await acts.runSteps({
      steps: batch.map((t) => stepOf(t.change)),
      ...(options.retry?.maximumAttempts ? { maximumAttempts: options.retry.maximumAttempts } : {}),
    });
    batch.forEach((task, i) => {
      const result = results[i];
      if (!result) throw new Error(`apply: runSteps returned ${results.length} results for ${batch.length} steps`);
      record(task.change, task.index, result);
    });
  }

  const complete = await runGraph(tasks, limit, Math.max(1, options.batchSize ?? 1), run, options.shouldPause);
  // Parallel changes finish in any order; results are reported in plan order.
  return { orgId: orgId ?? '', applied: applied.sort((x, y) => x.index - y.index).map((a) => a.entry), complete };
}

/** The plan's changes as tasks, each with its dependencies (`plan/dependencies.ts`) counted and linked. */
function buildTasks(changes: Change[]): Task[] {
  const tasks: Task[] = changes.map((change, index) => ({ index, change, lane: laneOf(change), waitingFor: 0, dependents: [] }));
  const waits = dependencies(changes);
  tasks.forEach((task, index) => {
    for (const d of waits[index] ?? []) {
      const on = tasks[d];
      if (!on) continue;
      task.waitingFor++;
      on.dependents.push(task);
    }
  });
  return tasks;
}

/** The lane a change is spread over: its team, or '' for the organization and its provider keys. */
function laneOf(change: Change): string {
  if (change.kind === 'team') return change.name;
  if (change.kind === 'agent' || change.kind === 'human' || change.kind === 'edge') return change.team;
  return '';
}

/**
 * Runs the tasks in batches of up to `batchSize` ready tasks of one lane, with at most `limit`
 * batches in flight. The next batch is taken from the lane with the fewest batches in flight (the
 * least recently served among equals), in plan order within a lane.
 * Returns true when every task ran, false when `shouldPause` stopped it first; raises the first
 * failure once the tasks in flight have settled (tasks waiting for a failed one never start).
 */
async function runGraph(tasks: Task[], limit: number, batchSize: number, run: (batch: Task[]) => Promise<void>, shouldPause?: (started: number) => boolean): Promise<boolean> {
  interface Lane {
    ready: Task[];
    inFlight: number;
    servedAt: number;
  }
  const lanes = new Map<string, Lane>();
  const laneOf = (name: string): Lane => {
    let lane = lanes.get(name);
    if (!lane) lanes.set(name, (lane = { ready: [], inFlight: 0, servedAt: -1 }));
    return lane;
  };
  for (const t of tasks) {
    laneOf(t.lane);
    if (t.waitingFor === 0) laneOf(t.lane).ready.push(t);
  }
  // Finished tasks queue up here and one promise wakes the loop: a Promise.race over the tasks
  // in flight would create a promise per task on every turn, and in Temporal's workflow sandbox
  // every promise costs a captured stack trace.
  // A failure is queued like a success and counts only once dequeued, in finishing order.
  const settled: Array<{ lane: Lane; batch: Task[]; error?: { error: unknown } }> = [];
  let wake: (() => void) | undefined;
  let running = 0;
  let started = 0;
  let finished = 0;
  let failure: { error: unknown } | undefined;
  let paused = false;

  const next = (): { lane: Lane; batch: Task[] } | undefined => {
    let best: Lane | undefined;
    for (const lane of lanes.values()) {
      if (lane.ready.length === 0) continue;
      if (!best || lane.inFlight < best.inFlight || (lane.inFlight === best.inFlight && lane.servedAt < best.servedAt)) best = lane;
    }
    if (!best) return undefined;
    best.inFlight++;
    best.servedAt = started;
    return { lane: best, batch: best.ready.splice(0, batchSize) };
  };
  const settle = (lane: Lane, batch: Task[], error?: { error: unknown }) => {
    settled.push(error ? { lane, batch, error } : { lane, batch });
    wake?.();
    wake = undefined;
  };

  // One finished task is handled at a time, and the free places are filled after each: what
  // starts next then depends only on the order in which tasks finished, never on how many
  // finished together (Temporal may deliver a batch at once when it replays a history).
  for (;;) {
    while (!failure && running < limit) {
      // At least one change per pass, so a pass that pauses has always made progress.
      if (started > 0 && shouldPause?.(started)) {
        paused = true;
        break;
      }
      const taken = next();
      if (!taken) break;
      const { lane, batch } = taken;
      started += batch.length;
      running++;
      run(batch).then(
        () => settle(lane, batch),
        (error: unknown) => settle(lane, batch, { error }),
      );
    }
    if (running === 0) break;
    let done = settled.shift();
    while (!done) {
      await new Promise<void>((resolve) => (wake = resolve));
      done = settled.shift();
    }
    if (done.error) failure ??= done.error;
    running--;
    finished += done.batch.length;
    done.lane.inFlight--;
    if (failure) continue;
    for (const task of done.batch) {
      for (const dependent of task.dependents) {
        if (--dependent.waitingFor === 0) laneOf(dependent.lane).ready.push(dependent);
      }
    }
  }
  if (failure) throw failure.error;
  return !paused || finished === tasks.length;
}
