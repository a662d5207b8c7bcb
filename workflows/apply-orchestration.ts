/**
 * The orchestration of `apply`, shared by both engines: read the live state, compute the plan,
 * then run its changes through the activities as a dependency graph — a team's participants
 * after the team is created, an edge after both its participants are, everything after the
 * organization — with at most `parallelism` changes in flight, spread across teams so that
 * parallel calls do not queue behind one team's row lock.
 *
 * It knows activities only as types and does no I/O itself, so the Temporal workflow runs it in
 * its sandbox and the local engine runs it in-process, unchanged. It is deterministic: the next
 * change to start depends only on which changes have finished, in the order they finished.
 */
import type { ApplyActivities, EnsureResult, Step } from '../activities/apply-activities.ts';
import type { Connection } from '../activities/connection.ts';
import { agentFields, computePlan, humanFields, teamFields } from '../plan/plan.ts';
import type { Change, DesiredState, ObservedState } from '../plan/types.ts';
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
export interface AppliedChange extends Change {
  outcome: EnsureResult['outcome'];
}

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
 * graphs of the teams the definition names, read in parallel (at most `limit` at once).
 */
export async function readObserved(
  acts: Pick<OrchestratedActivities, 'readOrganization' | 'readTeam'>,
  connection: Connection,
  desired: DesiredState,
  limit: number = DEFAULT_PARALLELISM,
): Promise<ObservedState> {
  const org = await acts.readOrganization({ connection, desired });
  const wanted = new Set(desired.teams.map((t) => t.name));
  const named = org.teams.filter((t) => wanted.has(t.team_name));
  const teams = await mapBounded(named, limit, (team) => acts.readTeam({ connection, teamId: team.team_id }));
  return { organization: org.organization, providerKeys: org.providerKeys, teams };
}

/** A change of the plan with what it waits for. */
interface Task {
  index: number;
  change: Change;
  /** The lane it is spread over: its team, or '' for the organization and provider keys. */
  lane: string;
  /** Tasks not yet finished that this one waits for. */
  waitingFor: number;
  dependents: number[];
}

/**
 * Runs one apply. Raises the first activity failure after the changes in flight settle; a re-run
 * picks up from the live state, so an interrupted apply converges.
 */
export async function orchestrateApply(input: ApplyInput, acts: OrchestratedActivities, options: OrchestrationOptions = {}): Promise<OrchestrationResult> {
  const { connection, desired } = input;
  const limit = Math.max(1, input.parallelism ?? DEFAULT_PARALLELISM);
  const observed = await readObserved(acts, connection, desired, limit);
  const plan = computePlan(desired, observed);
  if (plan.changes.length > 0) await options.afterPlan?.();

  const teamIds = new Map(observed.teams.map((t) => [t.team.team_name, t.team.team_id]));
  const key = (team: string, name: string) => `${team}\u0000${name}`;
  const participantIds = new Map<string, string>();
  for (const t of observed.teams) {
    for (const a of t.agents) participantIds.set(key(t.team.team_name, a.name), a.agent_id);
    for (const h of t.humans) participantIds.set(key(t.team.team_name, h.name), h.human_id);
  }
  let orgId = observed.organization?.org_id ?? '';
  const teamsByName = new Map(desired.teams.map((t) => [t.name, t]));

  const tasks = buildTasks(plan.changes);
  const applied: Array<{ index: number; entry: AppliedChange }> = [];

  /** The call that makes `change`, with the ids it needs (known once the creates it waits for are done). */
  function stepOf(change: Change): Step {
    switch (change.kind) {
      case 'organization':
        return { op: 'ensureOrganization', input: { connection, name: desired.organization.name } };
      case 'provider_key': {
        const provider = change.name as keyof NonNullable<DesiredState['organization']['providerKeys']>;
        return { op: 'putProviderKey', input: { connection, orgId, provider, secretRef: desired.organization.providerKeys?.[provider] as string } };
      }
      case 'team':
        return change.action === 'update' && change.id
          ? { op: 'updateTeam', input: { connection, teamId: change.id, patch: change.fields } }
          : { op: 'ensureTeam', input: { connection, orgId, fields: teamFields(teamsByName.get(change.name)!) } };
      case 'agent': {
        const team = teamsByName.get(change.team!)!;
        return change.action === 'update' && change.id
          ? { op: 'updateAgent', input: { connection, agentId: change.id, patch: change.fields } }
          : { op: 'ensureAgent', input: { connection, teamId: teamIds.get(team.name)!, fields: agentFields(team.agents.find((a) => a.name === change.name)!) } };
      }
      case 'human': {
        const team = teamsByName.get(change.team!)!;
        return change.action === 'update' && change.id
          ? { op: 'updateHuman', input: { connection, humanId: change.id, patch: change.fields } }
          : { op: 'ensureHuman', input: { connection, teamId: teamIds.get(team.name)!, fields: humanFields(team.humans.find((h) => h.name === change.name)!) } };
      }
      case 'edge': {
        const team = change.team!;
        const [a, b] = change.fields.participants as [string, string];
        return { op: 'ensureEdge', input: { connection, teamId: teamIds.get(team)!, participants: [participantIds.get(key(team, a))!, participantIds.get(key(team, b))!] } };
      }
    }
  }

  /** Records a made change: its id becomes known to the changes that wait for it. */
  function record(change: Change, index: number, result: EnsureResult): void {
    if (change.kind === 'organization') orgId = result.id;
    if (change.kind === 'team') teamIds.set(change.name, result.id);
    if (change.kind === 'agent' || change.kind === 'human') participantIds.set(key(change.team!, change.name), result.id);
    // PUT cannot tell a new provider key from a replaced one; the plan can.
    const outcome = change.kind === 'provider_key' ? (change.action === 'create' ? 'created' : 'updated') : result.outcome;
    const entry = { ...change, outcome };
    applied.push({ index, entry });
    options.onProgress?.(entry);
  }

  /** Makes a batch of changes with one activity call. */
  async function run(batch: Task[]): Promise<void> {
    const results = await acts.runSteps({
      steps: batch.map((t) => stepOf(t.change)),
      ...(options.retry?.maximumAttempts ? { maximumAttempts: options.retry.maximumAttempts } : {}),
    });
    batch.forEach((t, i) => record(t.change, t.index, results[i]!));
  }

  const complete = await runGraph(tasks, limit, Math.max(1, options.batchSize ?? 1), run, options.shouldPause);
  // Parallel changes finish in any order; results are reported in plan order.
  return { orgId, applied: applied.sort((x, y) => x.index - y.index).map((a) => a.entry), complete };
}

/**
 * The dependency graph of a plan. A change waits only for the creates whose ids it needs: every
 * change for the organization's create; a team's participants for the team's create; an edge
 * for its team's and its participants' creates. Updates of existing resources wait for nothing.
 */
function buildTasks(changes: Change[]): Task[] {
  const tasks: Task[] = changes.map((change, index) => ({ index, change, lane: change.kind === 'team' ? change.name : change.team ?? '', waitingFor: 0, dependents: [] }));
  const creates = new Map<string, number>();
  const id = (kind: string, team: string, name: string) => `${kind}\u0000${team}\u0000${name}`;
  for (const t of tasks) {
    if (t.change.action !== 'create') continue;
    if (t.change.kind === 'organization') creates.set('organization', t.index);
    if (t.change.kind === 'team') creates.set(id('team', t.change.name, ''), t.index);
    if (t.change.kind === 'agent' || t.change.kind === 'human') creates.set(id('participant', t.change.team!, t.change.name), t.index);
  }
  const dependsOn = (task: Task, on: number | undefined) => {
    if (on === undefined || on === task.index) return;
    task.waitingFor++;
    tasks[on]!.dependents.push(task.index);
  };
  for (const t of tasks) {
    dependsOn(t, creates.get('organization'));
    if (t.change.kind === 'agent' || t.change.kind === 'human' || t.change.kind === 'edge') dependsOn(t, creates.get(id('team', t.change.team!, '')));
    if (t.change.kind === 'edge') {
      for (const p of t.change.fields.participants as [string, string]) dependsOn(t, creates.get(id('participant', t.change.team!, p)));
    }
  }
  return tasks;
}

/**
 * Runs the tasks in batches of up to `batchSize` ready tasks of one lane, with at most `limit`
 * batches in flight. The next batch is taken from the lane with the fewest batches in flight (the
 * least recently served among equals), in plan order within a lane.
 * Returns true when every task ran, false when `shouldPause` stopped it first; raises the first
 * failure once the tasks in flight have settled (tasks waiting for a failed one never start).
 */
async function runGraph(tasks: Task[], limit: number, batchSize: number, run: (batch: Task[]) => Promise<void>, shouldPause?: (started: number) => boolean): Promise<boolean> {
  const lanes = new Map<string, { ready: Task[]; inFlight: number; servedAt: number }>();
  const laneOf = (name: string) => {
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
  const settled: Array<{ batch: Task[]; error?: { error: unknown } }> = [];
  let wake: (() => void) | undefined;
  let running = 0;
  let started = 0;
  let finished = 0;
  let failure: { error: unknown } | undefined;
  let paused = false;

  const next = (): Task[] | undefined => {
    let best: { ready: Task[]; inFlight: number; servedAt: number } | undefined;
    for (const lane of lanes.values()) {
      if (lane.ready.length === 0) continue;
      if (!best || lane.inFlight < best.inFlight || (lane.inFlight === best.inFlight && lane.servedAt < best.servedAt)) best = lane;
    }
    if (!best) return undefined;
    best.inFlight++;
    best.servedAt = started;
    return best.ready.splice(0, batchSize);
  };
  const settle = (batch: Task[], error?: { error: unknown }) => {
    settled.push(error ? { batch, error } : { batch });
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
      const batch = next();
      if (!batch) break;
      started += batch.length;
      running++;
      run(batch).then(
        () => settle(batch),
        (error: unknown) => settle(batch, { error }),
      );
    }
    if (running === 0) break;
    if (settled.length === 0) await new Promise<void>((resolve) => (wake = resolve));
    const { batch, error } = settled.shift()!;
    if (error) failure ??= error;
    running--;
    finished += batch.length;
    laneOf(batch[0]!.lane).inFlight--;
    if (failure) continue;
    for (const task of batch) {
      for (const d of task.dependents) {
        const dependent = tasks[d]!;
        if (--dependent.waitingFor === 0) laneOf(dependent.lane).ready.push(dependent);
      }
    }
  }
  if (failure) throw failure.error;
  return !paused || finished === tasks.length;
}
