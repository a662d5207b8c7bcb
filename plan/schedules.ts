/**
 * The plan of schedules: a pure function of the desired schedules (from a definition) and the
 * observed ones (the organization's Temporal Schedules), with no I/O, like `plan.ts`.
 *
 * A schedule is compared by the hash of its *document* (every field of the definition that shapes
 * the Temporal schedule, except `paused`), which `temporal/schedules.ts` computes and stores on
 * the schedule; `paused` is compared on its own, because `teamctl schedules pause` changes it
 * without changing the document. Unlike resources, schedules are deleted: a schedule of the
 * organization that the definition no longer names is removed.
 */
import type { Connection } from '../activities/connection.ts';
import type { InputValue, OverlapPolicy } from '../definitions/pipeline-schema.ts';
import { scheduleAddress } from './addresses.ts';
import type { FieldDiff } from './types.ts';

/** What the plan does to a schedule. */
export const ScheduleChangeActions = { create: 'create', update: 'update', delete: 'delete' } as const;
export type ScheduleChangeAction = keyof typeof ScheduleChangeActions;

/**
 * The fields of a schedule that teamctl reconciles, as stored with it (so a plan can show what
 * changed, not only that something did). The pipeline is represented by its name and a digest of
 * its definition: the runs carry the whole pipeline, and an edit of its steps must update them.
 */
export interface ScheduleDocument {
  pipeline: string;
  /** Short digest of the pipeline definition the runs carry. */
  pipelineDigest: string;
  description: string | null;
  cron: string | null;
  every: string | null;
  timezone: string;
  overlap: OverlapPolicy;
  catchupWindow: string | null;
  inputs: Record<string, InputValue>;
  taskQueue: string;
  /** The service and the names of the key variables (never a key). */
  connection: Connection;
}

/** A schedule as the definition wants it. */
export interface DesiredSchedule {
  name: string;
  /** The Temporal schedule id (`teamctl/<organization>/<name>`). */
  id: string;
  /** Hash of {@link document}. */
  hash: string;
  document: ScheduleDocument;
  paused: boolean;
}

/** A schedule of the organization as Temporal holds it. */
export interface ObservedSchedule {
  name: string;
  id: string;
  /** The stored hash; null when the schedule carries none (not made by teamctl). */
  hash: string | null;
  document: ScheduleDocument | null;
  paused: boolean;
}

/**
 * One change of schedules, in the shape of a resource change (`plan/types.ts`: action, kind,
 * name, address, id). `fields` (create) holds the document and `paused`; `diff` (update) the
 * fields that differ, live value to desired value (`(unknown)` when the live schedule carries no
 * document). A delete needs consent as any delete does (`cli/lifecycle.ts`).
 */
export interface ScheduleChange {
  action: ScheduleChangeAction;
  kind: 'schedule';
  name: string;
  /** `schedule/NAME`, as `--target` and `--exclude` take it (the resource changes' addresses: `plan/addresses.ts`). */
  address: string;
  id: string;
  fields?: Record<string, unknown>;
  diff?: Record<string, FieldDiff>;
}

/** Shown as the live value of a field of a schedule that carries no document. */
export const UNKNOWN = '(unknown)';

/** Canonical JSON: keys sorted at every level, so equal values compare equal. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/** The fields of two documents that differ; every field when the live one is unknown. */
function documentDiff(live: ScheduleDocument | null, desired: ScheduleDocument): Record<string, FieldDiff> {
  const diff: Record<string, FieldDiff> = {};
  for (const [key, to] of Object.entries(desired)) {
    const from = live === null ? UNKNOWN : (live as unknown as Record<string, unknown>)[key];
    if (canonicalJson(from) !== canonicalJson(to)) diff[key] = { from, to };
  }
  return diff;
}

/**
 * Computes the schedule changes that make `observed` match `desired`. Input: the desired
 * schedules in file order and the organization's live ones (any order). Output: creates and
 * updates in file order, then deletes sorted by name. A schedule whose hash and paused state
 * match produces no change; a hash that differs with no field differing (a document written by
 * another version of teamctl) is an update of `hash`.
 */
export function diffSchedules(desired: readonly DesiredSchedule[], observed: readonly ObservedSchedule[]): ScheduleChange[] {
  const changes: ScheduleChange[] = [];
  const liveById = new Map(observed.map((s) => [s.id, s]));
  for (const schedule of desired) {
    const live = liveById.get(schedule.id);
    if (!live) {
      changes.push({ action: 'create', ...at(schedule), fields: { ...schedule.document, paused: schedule.paused } });
      continue;
    }
    const diff: Record<string, FieldDiff> = {};
    if (live.hash !== schedule.hash) {
      Object.assign(diff, documentDiff(live.document, schedule.document));
      if (Object.keys(diff).length === 0) diff['hash'] = { from: live.hash, to: schedule.hash };
    }
    if (live.paused !== schedule.paused) diff['paused'] = { from: live.paused, to: schedule.paused };
    if (Object.keys(diff).length > 0) changes.push({ action: 'update', ...at(schedule), diff });
  }
  const wanted = new Set(desired.map((s) => s.id));
  const gone = observed.filter((s) => !wanted.has(s.id)).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const schedule of gone) changes.push({ action: 'delete', ...at(schedule) });
  return changes;
}

/** What every change of a schedule says of it. */
function at(schedule: { name: string; id: string }): Pick<ScheduleChange, 'kind' | 'name' | 'address' | 'id'> {
  return { kind: 'schedule', name: schedule.name, address: scheduleAddress(schedule.name), id: schedule.id };
}

/** Whether an update changes only `paused` (then a pause or unpause suffices). */
export function onlyPausedChanges(change: ScheduleChange): boolean {
  return change.action === 'update' && Object.keys(change.diff ?? {}).every((key) => key === 'paused');
}
