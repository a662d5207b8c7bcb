/**
 * The orchestration of `apply` and `destroy`, shared by both engines: read the live state,
 * compute the plan (`plan/plan.ts`, or `plan/destroy.ts`), keep what `--target`/`--exclude`
 * select, refuse deletes nobody approved or that would remove a protected resource, then run the changes through the activities as a
 * dependency graph (`plan/dependencies.ts`) — a team's participants after the team is created, an
 * edge after both its participants are, an agent after the human it names as approver, a
 * participant's delete after its edges', everything after the organization — with at most `parallelism` changes in flight, spread across teams so
 * that parallel calls do not queue behind one team's row lock (the service takes it for the
 * renames and deletions of a team's members; their creations only share it).
 *
 * It knows activities only as types and does no I/O itself, so the Temporal workflow runs it in
 * its sandbox and the local engine runs it in-process, unchanged. It is deterministic: the next
 * change to start depends only on which changes have finished, in the order they finished.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { ApplyActivities, EnsureResult, ResultOf, Step } from '../activities/apply-activities.ts';
import type { Connection } from '../activities/connection.ts';
import { agentHeaderRefs, withHeaderRefs, type AgentHeaderRefs } from '../plan/agent-tools.ts';
import { dependencies } from '../plan/dependencies.ts';
import { knownIds, matchState, participantKey } from '../plan/plan.ts';
import { protectedDeletes, protectionMessage } from '../plan/protection.ts';
import { runPlan, type PlanRequest } from '../plan/run-plan.ts';
import type { Change, CreateChange, DeleteChange, DesiredState, ObservedState, ObservedTeam, UpdateChange } from '../plan/types.ts';
import { mapBounded } from './bounded.ts';

/** Input of an apply: where the service is (a key *reference*) and the desired state. */
export interface ApplyInput {
  connection: Connection;
  desired: DesiredState;
  /** Most changes (and reads) in flight at once (default {@link DEFAULT_PARALLELISM}). */
  parallelism?: number;
  /**
   * Most changes one activity call makes, one after another (default: 1 on the local engine; on
   * Temporal, where every activity costs the worker and the history a little, 40 of one team, or
   * {@link DEFAULT_TEMPORAL_CROSS_TEAM_BATCH_SIZE} when a call may hold several teams). Given, it
   * bounds both.
   */
  batchSize?: number;
  /**
   * Temporal only: seconds one activity call (a batch) may run before it is retried, for each
   * {@link DEFAULT_TEMPORAL_CHAINED_BATCH_SIZE} changes it holds (default 300: a call of 160
   * changes may run 1,200 s), so that a change has the time it had when a call held one team.
   */
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

/**
 * Default of {@link ApplyInput.batchSize} on Temporal when a batch may hold changes that wait for
 * each other ({@link OrchestrationOptions.chainedBatches}): a team with 10 participants and 20
 * edges (31 changes) is one activity call.
 */
export const DEFAULT_TEMPORAL_CHAINED_BATCH_SIZE = 40;

/**
 * Default size of a batch that may hold several teams ({@link OrchestrationOptions.crossTeamBatchSize}):
 * five teams of 10 participants and 20 edges. A fresh apply of 100 such teams at parallelism 8
 * (docs/performance.md) made 127 calls with one team a call; with batches of several teams ~75
 * at 100, ~65 at 160 and ~62 at 240, and 49–50 at 160 once shares stopped shrinking below
 * {@link CROSS_TEAM_MIN_SHARE}.
 */
export const DEFAULT_TEMPORAL_CROSS_TEAM_BATCH_SIZE = 160;

/**
 * With cross-team batches, the fewest changes a batch's share shrinks to at the end of an apply
 * (without them, one): a call of one or two changes costs the worker about as much as one of 8.
 */
export const CROSS_TEAM_MIN_SHARE = 8;

/** Most teams one read call reads ({@link OrchestrationOptions.batchedReads}). */
export const TEAMS_PER_READ = 100;

/**
 * Most JSON bytes of team graphs one read call returns ({@link OrchestrationOptions.batchedReads}):
 * half of Temporal's 2 MB per payload, whatever the teams hold (one team more is read again later).
 */
export const READ_BYTES = 1_000_000;

/** The activities the orchestration needs (a subset of {@link ApplyActivities}). */
export type OrchestratedActivities = Pick<ApplyActivities, 'readOrganization' | 'readTeam' | 'runSteps'> & Partial<Pick<ApplyActivities, 'readTeams'>>;

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
  /**
   * Read the teams' graphs with the organization (`readOrganization`'s `teamGraphs`) and then
   * `readTeams`, up to {@link TEAMS_PER_READ} teams and {@link READ_BYTES} a call, instead of one
   * `readTeam` call per team (the Temporal workflow: a no-op re-apply of 100 teams is one local
   * activity instead of 101). Needs `acts.readTeams`.
   */
  batchedReads?: boolean;
  /**
   * Let a batch hold changes of its team that wait for each other, in dependency order — the team,
   * then its participants, then its edges — each naming the ids made before it in the batch
   * ({@link ResultOf}). Without it a batch takes only changes ready to start, so a new team costs
   * three calls (team, participants, edges).
   */
  chainedBatches?: boolean;
  /**
   * With {@link chainedBatches}: asked once, when the first batch is formed (a run with nothing to
   * change never asks). A number lets a batch, once it holds its team's changes, take the whole
   * chains of other teams with nothing in flight while they fit, up to that many changes in all
   * (within each batch's share of the changes left). Every activity call costs the Temporal worker
   * a workflow activation and its payloads, ~2–3 ms of CPU (docs/performance.md), so a fresh
   * apply of 100 teams makes about half the calls. `undefined`: a batch holds one team.
   */
  crossTeamBatchSize?: () => number | undefined;
}

/**
 * Reads the live state an apply compares against: the organization, its provider keys, and the
 * graphs of all its teams (those the definition does not name are deleted), read in parallel (at
 * most `limit` at once), each agent's MCP header values judged against the definition's
 * templates (`plan/agent-tools.ts` `agentHeaderRefs`). `compareProviderKeys` false (destroy) reads
 * the provider keys and agents without resolving the definition's secrets: nothing will be set,
 * so they need not be there.
 * `batchedReads` (the Temporal workflow): in a few calls instead of one per team
 * ({@link OrchestrationOptions.batchedReads}). Errors: the activities'.
 */
export async function readObserved(
  acts: Pick<OrchestratedActivities, 'readOrganization' | 'readTeam' | 'readTeams'>,
  connection: Connection,
  desired: DesiredState,
  limit: number = DEFAULT_PARALLELISM,
  compareProviderKeys = true,
  batchedReads = false,
): Promise<ObservedState> {
  if (batchedReads && acts.readTeams) {
    const read = await readObservedInBatches(acts as typeof acts & Required<Pick<OrchestratedActivities, 'readTeams'>>, connection, desired, limit, compareProviderKeys);
    if ('inSync' in read) throw new Error('apply: readObserved asked for the whole live state but got an in-sync answer');
    return read;
  }
  const org = await acts.readOrganization({ connection, desired, compareProviderKeys });
  const headersOf = toolHeadersOf(desired, compareProviderKeys);
  const teams = await mapBounded(org.teams, limit, (team) => acts.readTeam({ connection, teamId: team.team_id, ...headersOf([team.team_name]) }));
  // A read recorded before webhooks were managed has none: they are then left alone (plan/plan.ts).
  return { organization: org.organization, providerKeys: org.providerKeys, teams, ...(org.webhooks ? { webhooks: org.webhooks } : {}) };
}

/**
 * What a team read adds to its input so that it judges the live MCP header values of the teams
 * it reads (by their live names): the desired agents' header templates of those teams, as
 * `{toolHeaders}`, or nothing — when none has headers (a recorded history's reads keep their
 * input), or `compare` is false (destroy resolves no secret).
 */
function toolHeadersOf(desired: DesiredState, compare: boolean): (teamNames: readonly string[]) => { toolHeaders?: AgentHeaderRefs[] } {
  const all = compare ? agentHeaderRefs(desired) : [];
  return (teamNames) => {
    const toolHeaders = all.filter((refs) => refs.teams.some((name) => teamNames.includes(name)));
    return toolHeaders.length > 0 ? { toolHeaders } : {};
  };
}

/** The answer of a read that found the live state needing no change (`inSyncFor`). */
interface InSync {
  inSync: true;
  organization: ObservedState['organization'];
}

/**
 * {@link readObserved} in few calls: the organization with the graphs of its first teams, then
 * the rest in calls of up to {@link TEAMS_PER_READ} teams, `limit` requests in flight in all; a
 * call that returns fewer teams than asked (its byte budget) is followed by one for the others.
 */
async function readObservedInBatches(
  acts: Pick<OrchestratedActivities, 'readOrganization'> & Required<Pick<OrchestratedActivities, 'readTeams'>>,
  connection: Connection,
  desired: DesiredState,
  limit: number,
  compareProviderKeys: boolean,
  inSyncFor?: Omit<PlanRequest, 'desired'>,
): Promise<ObservedState | InSync> {
  const read = (parallelism: number) => ({ parallelism, maxTeams: TEAMS_PER_READ, maxBytes: READ_BYTES });
  const org = await acts.readOrganization({ connection, desired, compareProviderKeys, teamGraphs: read(limit), ...(inSyncFor ? { inSyncFor } : {}) });
  if (org.inSync) return { inSync: true, organization: org.organization };
  const graphs = org.graphs ?? [];
  const rest = org.teams.slice(graphs.length).map((team) => team.team_id);
  const chunks: string[][] = [];
  for (let i = 0; i < rest.length; i += TEAMS_PER_READ) chunks.push(rest.slice(i, i + TEAMS_PER_READ));
  const calls = Math.max(1, Math.min(limit, chunks.length));
  const share = Math.max(1, Math.floor(limit / calls));
  const headersOf = toolHeadersOf(desired, compareProviderKeys);
  const names = new Map(org.teams.map((team) => [team.team_id, team.team_name]));
  const parts = await mapBounded(chunks, calls, async (teamIds) => {
    const out: ObservedTeam[] = [];
    for (let left = teamIds; left.length > 0; ) {
      const got = await acts.readTeams({ connection, teamIds: left, read: read(share), ...headersOf(left.map((id) => names.get(id) ?? '')) });
      if (got.length === 0) throw new Error('apply: readTeams returned no team');
      out.push(...got);
      left = left.slice(got.length);
    }
    return out;
  });
  return { organization: org.organization, providerKeys: org.providerKeys, teams: [...graphs, ...parts.flat()] };
}

/**
 * The changes one run makes: the plan of `input` (apply's, or destroy's) over the live state,
 * narrowed to its `--target`/`--exclude` selection. The CLI shows the same plan before asking.
 */
export function planOf(input: Pick<ApplyInput, 'desired' | 'targets' | 'excludes' | 'destroy'>, observed: ObservedState): Change[] {
  return runPlan(input, observed);
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
  /** Taken into a batch (by a chained batch before it was ready, too). */
  started: boolean;
}

/**
 * Runs one apply. Raises the first activity failure after the changes in flight settle; a re-run
 * picks up from the live state, so an interrupted apply converges.
 */
export async function orchestrateApply(input: ApplyInput, acts: OrchestratedActivities, options: OrchestrationOptions = {}): Promise<OrchestrationResult> {
  const { connection, desired } = input;
  const limit = Math.max(1, input.parallelism ?? DEFAULT_PARALLELISM);
  let observed: ObservedState;
  if (options.batchedReads && acts.readTeams) {
    // The read itself says when nothing is to change: a no-op records no graph at all.
    const read = await readObservedInBatches(acts as typeof acts & Required<Pick<OrchestratedActivities, 'readTeams'>>, connection, desired, limit, !input.destroy, {
      targets: input.targets,
      excludes: input.excludes,
      destroy: input.destroy,
    });
    if ('inSync' in read) return { orgId: read.organization?.org_id ?? '', applied: [], complete: true };
    observed = read;
  } else {
    observed = await readObserved(acts, connection, desired, limit, !input.destroy);
  }
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
  /**
   * What an earlier step of the batch being built makes, by key (`organization`, `team NAME`,
   * `participant TEAM NAME`) → its index in the batch: its id is that step's result
   * ({@link ResultOf}). Empty between batches.
   */
  let madeInBatch = new Map<string, number>();
  const idOf = (key: string, id: string | undefined, what: string): string | ResultOf => {
    const step = madeInBatch.get(key);
    if (id === undefined && step !== undefined) return { resultOf: step };
    return known(id, what);
  };
  // The step inputs are typed with ids; a ResultOf stands in for one until runSteps resolves it.
  const organization = () => idOf('organization', orgId, `organization ${desired.organization.name}`) as string;
  const team = (name: string) => idOf(`team\u0000${name}`, teamIds.get(name), `team ${name}`) as string;
  const participant = (teamName: string, name: string) =>
    idOf(`participant\u0000${participantKey(teamName, name)}`, participantIds.get(participantKey(teamName, name)), `participant ${name} of team ${teamName}`) as string;

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
        // MCP header values go to the activity as their templates, which it resolves.
        return { op: 'ensure', input: { connection, kind: 'agent', parentId: team(change.team), fields: withHeaderRefs(change.fields, change.headerRefs) } };
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
        return { op: 'update', input: { connection, kind: 'agent', id: change.id, patch: withHeaderRefs(change.fields, change.headerRefs) } };
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

  /** The steps of a batch; a create's id is known to the steps after it as its result. */
  function stepsOf(batch: Task[]): Step[] {
    madeInBatch = new Map();
    return batch.map((task, i) => {
      const step = stepOf(task.change);
      const change = task.change;
      if (change.action === 'create') {
        if (change.kind === 'organization') madeInBatch.set('organization', i);
        if (change.kind === 'team') madeInBatch.set(`team\u0000${change.name}`, i);
        if (change.kind === 'agent' || change.kind === 'human') madeInBatch.set(`participant\u0000${participantKey(change.team, change.name)}`, i);
      }
      return step;
    });
  }

  /** Makes a batch of changes with one activity call. */
  async function run(batch: Task[]): Promise<void> {
    const steps = stepsOf(batch);
    madeInBatch = new Map();
    const results = await acts.runSteps({
      steps,
      ...(options.retry?.maximumAttempts ? { maximumAttempts: options.retry.maximumAttempts } : {}),
    });
    batch.forEach((task, i) => {
      const result = results[i];
      if (!result) throw new Error(`apply: runSteps returned ${results.length} results for ${batch.length} steps`);
      record(task.change, task.index, result);
    });
  }

  const complete = await runGraph(tasks, limit, Math.max(1, options.batchSize ?? 1), run, options.shouldPause, options.chainedBatches ?? false, options.crossTeamBatchSize);
  // Parallel changes finish in any order; results are reported in plan order.
  return { orgId: orgId ?? '', applied: applied.sort((x, y) => x.index - y.index).map((a) => a.entry), complete };
}

/** The plan's changes as tasks, each with its dependencies (`plan/dependencies.ts`) counted and linked. */
function buildTasks(changes: Change[]): Task[] {
  const tasks: Task[] = changes.map((change, index) => ({ index, change, lane: laneOf(change), waitingFor: 0, dependents: [], started: false }));
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
 * least recently served among equals), in plan order within a lane. With `chained`, a batch then
 * takes, while it has room, the tasks of its lane whose unfinished dependencies are all in it,
 * each after those (the activity makes a batch's steps in order), and holds at most its share of
 * the tasks not yet started (their count ÷ `limit`), so that the end of a run is not one long batch.
 * With `crossTeam` (asked once, at the first batch; chained only) a batch that has room after its
 * lane's chain takes the whole chains of other lanes with nothing in flight, in the same order of
 * choice, while each fits in that room (up to the number it answers instead of `batchSize`).
 * A batch stops at its first failed change (`runSteps`), so the changes after it in the batch, of
 * other lanes too, are not made; the run fails either way, and a re-run makes them.
 * Returns true when every task ran, false when `shouldPause` stopped it first; raises the first
 * failure once the tasks in flight have settled (tasks waiting for a failed one never start).
 */
async function runGraph(
  tasks: Task[],
  limit: number,
  batchSize: number,
  run: (batch: Task[]) => Promise<void>,
  shouldPause?: (started: number) => boolean,
  chained = false,
  crossTeam?: () => number | undefined,
): Promise<boolean> {
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
  const settled: Array<{ lanes: Lane[]; batch: Task[]; error?: { error: unknown } }> = [];
  let wake: (() => void) | undefined;
  let running = 0;
  let started = 0;
  let finished = 0;
  let failure: { error: unknown } | undefined;
  let paused = false;
  /** The size of a batch of several lanes: null until the first batch asks `crossTeam`, undefined if it answers none. */
  let crossTeamSize: number | undefined | null = null;

  /** The lane served next: the one with the fewest batches in flight, the least recently served among equals. */
  const choose = (among: (lane: Lane) => boolean): Lane | undefined => {
    let best: Lane | undefined;
    for (const lane of lanes.values()) {
      if (lane.ready.length === 0 || !among(lane)) continue;
      if (!best || lane.inFlight < best.inFlight || (lane.inFlight === best.inFlight && lane.servedAt < best.servedAt)) best = lane;
    }
    return best;
  };
  const idle = (lane: Lane) => lane.inFlight === 0;
  const next = (): { lanes: Lane[]; batch: Task[] } | undefined => {
    const best = choose(() => true);
    if (!best) return undefined;
    if (chained && crossTeamSize === null) crossTeamSize = crossTeam?.();
    const taken = [best];
    best.inFlight++;
    best.servedAt = started;
    // Chained batches run their changes one after another, so the last ones of an apply would
    // leave places idle while one long batch finishes: a batch takes at most its share of the
    // changes not yet started, and shrinks towards one change (with cross-team batches, towards
    // CROSS_TEAM_MIN_SHARE) as the apply ends.
    const share = Math.max(crossTeamSize ? CROSS_TEAM_MIN_SHARE : 1, Math.ceil((tasks.length - started) / limit));
    const size = chained ? Math.min(batchSize, share) : batchSize;
    const batch = best.ready.splice(0, size);
    if (chained) chain(batch, size);
    if (chained && crossTeamSize) {
      const room = Math.min(crossTeamSize, share);
      // Another lane joins only whole (a team split across calls would cost a call more) and only
      // while nothing of it is in flight (two calls of its renames or deletions would queue on its row lock).
      for (let other = choose(idle); other && batch.length < room; other = choose(idle)) {
        if (other.ready.length > room - batch.length) break;
        const part = [...other.ready];
        chain(part, room - batch.length + 1);
        if (batch.length + part.length > room) break;
        other.ready.splice(0, other.ready.length);
        other.inFlight++;
        other.servedAt = started;
        taken.push(other);
        batch.push(...part);
      }
    }
    for (const task of batch) task.started = true;
    return { lanes: taken, batch };
  };
  /** Adds to `batch`, up to `size` and in dependency order, the tasks of its lane whose unfinished dependencies are all in it. */
  const chain = (batch: Task[], size: number) => {
    const lane = batch[0]?.lane;
    const inBatch = new Map<Task, number>();
    for (let i = 0; i < batch.length && batch.length < size; i++) {
      for (const dependent of batch[i]!.dependents) {
        if (dependent.lane !== lane || dependent.started || batch.includes(dependent)) continue;
        const waitsInBatch = (inBatch.get(dependent) ?? 0) + 1;
        inBatch.set(dependent, waitsInBatch);
        if (waitsInBatch === dependent.waitingFor && batch.length < size) batch.push(dependent);
      }
    }
  };
  const settle = (lanes: Lane[], batch: Task[], error?: { error: unknown }) => {
    settled.push(error ? { lanes, batch, error } : { lanes, batch });
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
      const { lanes: of, batch } = taken;
      started += batch.length;
      running++;
      run(batch).then(
        () => settle(of, batch),
        (error: unknown) => settle(of, batch, { error }),
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
    for (const lane of done.lanes) lane.inFlight--;
    if (failure) continue;
    for (const task of done.batch) {
      for (const dependent of task.dependents) {
        if (--dependent.waitingFor === 0 && !dependent.started) laneOf(dependent.lane).ready.push(dependent);
      }
    }
  }
  if (failure) throw failure.error;
  return !paused || finished === tasks.length;
}
