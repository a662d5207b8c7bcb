/**
 * Scheduled conversation jobs as Temporal Schedules: what a definition's `schedules:` become,
 * reading an organization's schedules back, applying a schedule plan, and the views and handles
 * `teamctl schedules …` works with.
 *
 * A schedule's id is `teamctl/<organization>/<schedule>`. Its action starts `pipelineWorkflow`
 * under the workflow id `teamctl-run/<organization>/<schedule>` (Temporal appends the scheduled
 * time) with the pipeline as the file had it when apply ran, so a later edit of the file changes
 * nothing until the next apply. The schedule's *document* (see `plan/schedules.ts`) and its hash
 * travel in the action's memo, so the next plan knows whether the schedule is up to date without
 * comparing Temporal's normalised spec (a cron expression comes back as calendars) field by field.
 */
import { createHash } from 'node:crypto';
import { ScheduleNotFoundError, ScheduleOverlapPolicy } from '@temporalio/client';
import type { Client, ScheduleDescription, ScheduleHandle, ScheduleOptions, ScheduleSpec, ScheduleUpdateOptions } from '@temporalio/client';
import type { Connection } from '../activities/connection.ts';
import { closestMatch } from '../definitions/did-you-mean.ts';
import { parseDuration } from '../definitions/durations.ts';
import type { OverlapPolicy, PipelineDefinition, ScheduleDefinition } from '../definitions/pipeline-schema.ts';
import type { Definition } from '../definitions/schema.ts';
import { ToolkitError } from '../errors/catalogue.ts';
import { canonicalJson, onlyPausedChanges } from '../plan/schedules.ts';
import type { DesiredSchedule, ObservedSchedule, ScheduleChange, ScheduleDocument } from '../plan/schedules.ts';
import { reachablePipelines } from '../definitions/pipeline-graph.ts';
import type { PipelineRunInput } from '../workflows/pipeline-orchestration.ts';
import { pipelineWorkflow } from '../workflows/pipeline-workflow.ts';

/**
 * Memo key of the action holding `{ hash, document }` as apply computed them. The action's memo,
 * not the schedule's: Temporal's UpdateSchedule cannot change a schedule's own memo, so a hash
 * kept there would stay at its first value. (Each scheduled run carries the same memo, which
 * tells which version of the schedule started it; it holds no secret.)
 */
export const SCHEDULE_MEMO = 'teamctl';

/** Version of the hashed document's layout: bumping it makes every schedule an update. */
const DOCUMENT_VERSION = 1;

/** Notes apply leaves on the schedules it pauses and on the others. */
const PAUSED_BY_APPLY = 'paused by teamctl apply (paused: true in the definition)';
const MANAGED_BY_APPLY = 'managed by teamctl apply';

/** The id prefix of an organization's schedules. */
export function schedulePrefix(organization: string): string {
  return `teamctl/${organization}/`;
}

/** The Temporal Schedule id of a schedule of an organization: `teamctl/<organization>/<name>`. */
export function scheduleId(organization: string, name: string): string {
  return `${schedulePrefix(organization)}${name}`;
}

/**
 * The workflow id of a schedule's runs, to which Temporal appends the scheduled time; under the
 * organization's run prefix (`engine/temporal-runs.ts`), so `teamctl runs list` shows them.
 */
export function scheduledRunId(organization: string, name: string): string {
  return `teamctl-run/${organization}/${name}`;
}

/** The schedule's name from its id, or undefined when the id is not one of the organization's. */
export function scheduleNameOf(id: string, organization: string): string | undefined {
  const prefix = schedulePrefix(organization);
  const rest = id.startsWith(prefix) ? id.slice(prefix.length) : '';
  // Schedule names hold no `/`: `teamctl/a/b/x` belongs to an organization "a/b", not to "a".
  return rest && !rest.includes('/') ? rest : undefined;
}

/** The definition's overlap policies in Temporal's spelling. */
export const OVERLAP: Record<OverlapPolicy, ScheduleOverlapPolicy> = {
  skip: ScheduleOverlapPolicy.SKIP,
  buffer_one: ScheduleOverlapPolicy.BUFFER_ONE,
  buffer_all: ScheduleOverlapPolicy.BUFFER_ALL,
  cancel_other: ScheduleOverlapPolicy.CANCEL_OTHER,
  terminate_other: ScheduleOverlapPolicy.TERMINATE_OTHER,
  allow_all: ScheduleOverlapPolicy.ALLOW_ALL,
};

/** A desired schedule with the Temporal options that create or update it. */
export interface PlannedSchedule extends DesiredSchedule {
  options: ScheduleOptions;
}

/** The spec of a schedule: a cron expression or an interval, in its time zone. */
function specOf(schedule: ScheduleDefinition): ScheduleSpec {
  return schedule.cron !== undefined
    ? { cronExpressions: [schedule.cron], timezone: schedule.timezone }
    : { intervals: [{ every: parseDuration(schedule.every!)! }], timezone: schedule.timezone };
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The hash of a schedule document (what the plan compares): 32 hex characters of SHA-256. */
export function documentHash(document: ScheduleDocument): string {
  return sha256(canonicalJson({ version: DOCUMENT_VERSION, document })).slice(0, 32);
}

/**
 * The schedules a validated definition wants, each with its Temporal options: runs connect with
 * `connection` (secret references only) and go to `taskQueue`; each run's input
 * (`PipelineRunInput`, without `runKey`: the run uses its own workflow id) carries the pipeline
 * as the file has it. Output: in the file's order. Raises nothing (the definition was validated:
 * every schedule names a pipeline of the file, and its durations parse).
 */
export function desiredSchedules(definition: Pick<Definition, 'organization' | 'pipelines' | 'schedules'>, connection: Connection, taskQueue: string): PlannedSchedule[] {
  const organization = definition.organization.name;
  return definition.schedules.map((schedule) => {
    const pipeline = definition.pipelines.find((p) => p.name === schedule.pipeline)!;
    // The sub-pipelines its `run` entries start travel with it (and count in its digest).
    const pipelines = reachablePipelines(definition.pipelines, pipeline.name);
    const hasSubPipelines = Object.keys(pipelines).length > 0;
    const input: PipelineRunInput = { connection, organization, pipeline, ...(hasSubPipelines ? { pipelines } : {}), inputs: schedule.inputs };
    const document: ScheduleDocument = {
      pipeline: pipeline.name,
      pipelineDigest: sha256(canonicalJson(hasSubPipelines ? { pipeline, pipelines } : pipeline)).slice(0, 12),
      description: schedule.description ?? null,
      cron: schedule.cron ?? null,
      every: schedule.every ?? null,
      timezone: schedule.timezone,
      overlap: schedule.overlap,
      catchupWindow: schedule.catchupWindow ?? null,
      inputs: schedule.inputs,
      taskQueue,
      connection,
    };
    const hash = documentHash(document);
    const id = scheduleId(organization, schedule.name);
    return {
      name: schedule.name,
      id,
      hash,
      document,
      paused: schedule.paused,
      options: {
        scheduleId: id,
        spec: specOf(schedule),
        action: {
          type: 'startWorkflow',
          workflowType: pipelineWorkflow,
          args: [input],
          taskQueue,
          workflowId: scheduledRunId(organization, schedule.name),
          memo: { [SCHEDULE_MEMO]: { hash, document } },
        },
        policies: { overlap: OVERLAP[schedule.overlap], ...(schedule.catchupWindow ? { catchupWindow: parseDuration(schedule.catchupWindow)! } : {}) },
        state: { paused: schedule.paused, note: schedule.paused ? PAUSED_BY_APPLY : MANAGED_BY_APPLY },
      },
    };
  });
}

/** The `{ hash, document }` apply stored on a schedule; undefined on one teamctl did not make. */
export function storedDocument(description: ScheduleDescription): { hash: string; document: ScheduleDocument } | undefined {
  const stored = description.action.memo?.[SCHEDULE_MEMO] as { hash?: unknown; document?: unknown } | undefined;
  if (!stored || typeof stored.hash !== 'string' || typeof stored.document !== 'object' || stored.document === null) return undefined;
  return { hash: stored.hash, document: stored.document as ScheduleDocument };
}

/** A schedule as read back, or undefined when it does not exist. */
async function describeOrNone(client: Client, id: string): Promise<ScheduleDescription | undefined> {
  try {
    return await client.schedule.getHandle(id).describe();
  } catch (error) {
    if (error instanceof ScheduleNotFoundError) return undefined;
    throw error;
  }
}

/** What {@link exportSchedules} read back: a definition's `schedules:` and `pipelines:` parts. */
export interface ExportedSchedules {
  schedules: ScheduleDefinition[];
  /** The pipelines the schedules run, as each schedule's action carries them (first one per name). */
  pipelines: PipelineDefinition[];
  /** The task queues the schedules' runs go to (plan and apply must be given the same one). */
  taskQueues: string[];
  /** Names of schedules under the organization's prefix that teamctl did not make (no memo): left out. */
  skipped: string[];
}

/**
 * Reads an organization's schedules back as a definition says them, for `teamctl export`: each
 * schedule from the document apply stored in its memo and its live paused state, each pipeline
 * from the run input in its action (the pipeline as it was when apply last wrote the schedule).
 * A definition holding them plans no schedule change with the same connection and task queue.
 * Output: schedules in name order. Errors: Temporal's.
 */
export async function exportSchedules(client: Client, organization: string): Promise<ExportedSchedules> {
  const out: ExportedSchedules = { schedules: [], pipelines: [], taskQueues: [], skipped: [] };
  for (const id of (await listScheduleIds(client, organization)).sort()) {
    const name = scheduleNameOf(id, organization);
    const description = await describeOrNone(client, id);
    if (!name || !description) continue;
    const stored = storedDocument(description);
    const input = description.action.args?.[0] as Partial<PipelineRunInput> | undefined;
    if (!stored || !input?.pipeline) {
      out.skipped.push(name);
      continue;
    }
    const d = stored.document;
    out.schedules.push({
      name,
      pipeline: d.pipeline,
      ...(d.description !== null ? { description: d.description } : {}),
      ...(d.cron !== null ? { cron: d.cron } : {}),
      ...(d.every !== null ? { every: d.every } : {}),
      timezone: d.timezone,
      overlap: d.overlap,
      ...(d.catchupWindow !== null ? { catchupWindow: d.catchupWindow } : {}),
      paused: description.state.paused,
      inputs: d.inputs,
    });
    for (const pipeline of [input.pipeline, ...Object.values(input.pipelines ?? {})]) if (!out.pipelines.some((p) => p.name === pipeline.name)) out.pipelines.push(pipeline);
    if (!out.taskQueues.includes(d.taskQueue)) out.taskQueues.push(d.taskQueue);
  }
  return out;
}

/**
 * The ids of an organization's schedules, from Temporal's schedule list: filtered by the server
 * (`ScheduleId STARTS_WITH`) where it supports that, else by listing all and filtering here.
 * Eventually consistent: a schedule created a moment ago may be missing. Errors: Temporal's.
 */
export async function listScheduleIds(client: Client, organization: string): Promise<string[]> {
  const prefix = schedulePrefix(organization);
  const collect = async (query: string | undefined) => {
    const ids: string[] = [];
    for await (const summary of client.schedule.list(query ? { query } : {})) {
      if (scheduleNameOf(summary.scheduleId, organization) !== undefined) ids.push(summary.scheduleId);
    }
    return ids.sort();
  };
  try {
    return await collect(`ScheduleId STARTS_WITH '${prefix.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`);
  } catch {
    // Older servers reject the query; the full list is fine for the few schedules a namespace holds.
    return collect(undefined);
  }
}

/**
 * Reads the schedules Temporal holds for an organization. The ids in `wanted` (the definition's)
 * are described directly, which is strongly consistent, so a plan right after an apply sees what
 * it made; the others come from the schedule list, which is eventually consistent (a schedule
 * created elsewhere a moment ago may be missing from it, one deleted a moment ago is skipped).
 * Output: the observed schedules with their stored hash and document. Errors: Temporal's.
 */
export async function readSchedules(client: Client, organization: string, wanted: readonly string[]): Promise<ObservedSchedule[]> {
  const found: ObservedSchedule[] = [];
  const ids = [...new Set([...wanted, ...(await listScheduleIds(client, organization))])];
  for (const id of ids) {
    const name = scheduleNameOf(id, organization);
    if (name === undefined) continue;
    const description = await describeOrNone(client, id);
    if (!description) continue;
    const stored = storedDocument(description);
    found.push({ name, id, hash: stored?.hash ?? null, document: stored?.document ?? null, paused: description.state.paused });
  }
  return found;
}

/** What became of one schedule change. */
export interface AppliedScheduleChange {
  kind: 'schedule';
  name: string;
  id: string;
  outcome: 'created' | 'updated' | 'deleted';
}

/**
 * Applies schedule changes in order: create (with the options of `planned`), update (a pause or
 * unpause when only `paused` differs; else spec, action, policies and state), delete (one already
 * gone counts as deleted). Calls `onChange` as each completes. Output: what was done. Errors:
 * Temporal's, as they are; changes before the failing one stay applied, and a re-run converges.
 */
export async function applyScheduleChanges(
  client: Client,
  changes: readonly ScheduleChange[],
  planned: readonly PlannedSchedule[],
  onChange?: (change: AppliedScheduleChange) => void,
): Promise<AppliedScheduleChange[]> {
  const byId = new Map(planned.map((p) => [p.id, p]));
  const applied: AppliedScheduleChange[] = [];
  for (const change of changes) {
    const handle = client.schedule.getHandle(change.id);
    let outcome: AppliedScheduleChange['outcome'];
    if (change.action === 'delete') {
      await handle.delete().catch((error: unknown) => {
        if (!(error instanceof ScheduleNotFoundError)) throw error;
      });
      outcome = 'deleted';
    } else {
      const schedule = byId.get(change.id)!;
      if (change.action === 'create') {
        await client.schedule.create(schedule.options);
        outcome = 'created';
      } else if (onlyPausedChanges(change)) {
        // Pause and unpause are calls of their own: they keep the rest, and the note says why.
        await (schedule.paused ? handle.pause(PAUSED_BY_APPLY) : handle.unpause(MANAGED_BY_APPLY));
        outcome = 'updated';
      } else {
        const { scheduleId: _id, memo: _memo, ...options } = schedule.options;
        await handle.update(() => options as ScheduleUpdateOptions);
        outcome = 'updated';
      }
    }
    const done: AppliedScheduleChange = { kind: 'schedule', name: change.name, id: change.id, outcome };
    applied.push(done);
    onChange?.(done);
  }
  return applied;
}

/**
 * The handle of an organization's schedule `name`, once it is known to exist. Output: the handle
 * and its description. Errors: `schedule_not_found` naming the organization's schedules, with a
 * did-you-mean for a likely typo; Temporal's otherwise.
 */
export async function findSchedule(client: Client, organization: string, name: string): Promise<{ handle: ScheduleHandle; description: ScheduleDescription }> {
  const handle = client.schedule.getHandle(scheduleId(organization, name));
  const description = name.includes('/') ? undefined : await describeOrNone(client, handle.scheduleId);
  if (description) return { handle, description };
  const names = (await listScheduleIds(client, organization)).map((id) => scheduleNameOf(id, organization)!);
  const match = closestMatch(name, names);
  const known = names.length ? `; its schedules: ${names.join(', ')}` : '; it has none (apply creates the schedules of a definition)';
  throw new ToolkitError('schedule_not_found', `organization "${organization}" has no schedule named "${name}" on Temporal${match ? ` (did you mean "${match}"?)` : known}`);
}

/** A schedule as `teamctl schedules list | describe` show it. Times are ISO 8601 in UTC. */
export interface ScheduleView {
  name: string;
  id: string;
  pipeline: string | null;
  /** `cron 0 2 * * *` or `every 15m` as the file said; Temporal's own spec for a schedule not made by teamctl. */
  spec: string;
  timezone: string;
  overlap: string;
  catchup_window: string | null;
  paused: boolean;
  note: string | null;
  inputs: Record<string, unknown> | null;
  task_queue: string | null;
  /** Whether apply made it (it carries a document). */
  managed: boolean;
  next_runs: string[];
  recent_runs: Array<{ scheduled_at: string; started_at: string; run_id: string }>;
  running: string[];
  actions_taken: number;
  created_at: string;
}

/** A description as a {@link ScheduleView}. */
export function scheduleView(description: ScheduleDescription, name: string): ScheduleView {
  const stored = storedDocument(description)?.document;
  const input = description.action.args?.[0] as Partial<PipelineRunInput> | undefined;
  const intervals = description.spec.intervals ?? [];
  // Temporal keeps a cron expression as calendars: the file's own spelling comes from the document.
  const spec = stored?.cron
    ? `cron ${stored.cron}`
    : stored?.every
      ? `every ${stored.every}`
      : intervals.length > 0
        ? `every ${intervals.map((i) => `${Number(i.every) / 1000}s`).join(', ')}`
        : 'calendar (not made by teamctl)';
  return {
    name,
    id: description.scheduleId,
    pipeline: input?.pipeline?.name ?? null,
    spec,
    timezone: description.spec.timezone ?? 'UTC',
    overlap: String(description.policies.overlap ?? 'SKIP').toLowerCase(),
    catchup_window: stored?.catchupWindow ?? null,
    paused: description.state.paused,
    note: description.state.note || null,
    inputs: stored?.inputs ?? (input?.inputs as Record<string, unknown> | undefined) ?? null,
    task_queue: description.action.taskQueue ?? null,
    managed: stored !== undefined,
    next_runs: (description.info.nextActionTimes ?? []).map((t) => t.toISOString()),
    recent_runs: (description.info.recentActions ?? []).map((a) => ({
      scheduled_at: a.scheduledAt.toISOString(),
      started_at: a.takenAt.toISOString(),
      run_id: a.action.workflow.workflowId,
    })),
    running: (description.info.runningActions ?? []).map((a) => a.workflow.workflowId),
    actions_taken: description.info.numActionsTaken ?? 0,
    created_at: description.info.createdAt.toISOString(),
  };
}
