/**
 * The schedule part of `plan` and `apply`.
 *
 * When Temporal is consulted:
 * - the definition has schedules: Temporal must answer, or the command fails with
 *   `temporal_unreachable` before anything has changed (apply reads the schedules first);
 * - else, when a Temporal server is configured explicitly (`TEMPORAL_ADDRESS`, `TEMPORAL_PROFILE`,
 *   `TEMPORAL_CONFIG_FILE`) or `apply --engine temporal` runs: Temporal is asked for the
 *   organization's schedules, so that removing the last schedule from a file still deletes it;
 *   an unreachable server then only prints a warning (the resources do not need it);
 * - else schedules are not looked at: a machine with no Temporal configured can plan and apply
 *   resources without one.
 */
import type { Client } from '@temporalio/client';
import type { Connection } from '../activities/connection.ts';
import type { Definition } from '../definitions/schema.ts';
import { ToolkitError } from '../errors/catalogue.ts';
import { diffSchedules } from '../plan/schedules.ts';
import type { ScheduleChange } from '../plan/schedules.ts';
import type { AppliedScheduleChange, PlannedSchedule } from '../temporal/schedules.ts';
import { loadTemporalSettings, temporalConfigured } from '../temporal/settings.ts';
import type { CliIo } from './io.ts';

/** The schedule changes of a definition, with what they create or update. */
export interface SchedulePlan {
  changes: ScheduleChange[];
  planned: PlannedSchedule[];
  /** Whether the organization has schedules in the file or on Temporal (the outputs show `schedules` then). */
  relevant: boolean;
}

/** The schedule helpers of `temporal/schedules.ts`, loaded by {@link withTemporalSchedules}. */
export type ScheduleHelpers = typeof import('../temporal/schedules.ts');

/**
 * Runs `fn` with a Temporal client (settings from `env`) and the schedule helpers, both loaded
 * here rather than at the top: Temporal's client weighs 0.2–0.3 s of start-up that the commands
 * not talking to Temporal spare. Errors: `temporal_unreachable`; `fn`'s.
 */
export async function withTemporalSchedules<T>(env: NodeJS.ProcessEnv, fn: (client: Client, helpers: ScheduleHelpers) => Promise<T>): Promise<T> {
  const [{ withTemporalClient }, helpers] = await Promise.all([import('../engine/temporal-engine.ts'), import('../temporal/schedules.ts')]);
  return withTemporalClient(loadTemporalSettings(env), (client) => fn(client, helpers), env);
}

/** Whether the environment names a Temporal server explicitly (temporal/settings.ts, shared with `runs`). */
export { temporalConfigured } from '../temporal/settings.ts';

/**
 * Reads the organization's schedules on Temporal and plans them against the definition (see the
 * module's comment for when). Input: the definition, the connection runs will use, the task
 * queue runs will go to, whether Temporal is needed anyway (`apply --engine temporal`). Output:
 * the plan, or undefined when schedules are not looked at. Errors: `temporal_unreachable` when
 * the definition has schedules and Temporal does not answer; Temporal's own otherwise.
 */
export async function readSchedulePlan(
  definition: Definition,
  connection: Connection,
  taskQueue: string,
  io: CliIo,
  temporalInUse = false,
): Promise<SchedulePlan | undefined> {
  const needed = definition.schedules.length > 0;
  if (!needed && !temporalInUse && !temporalConfigured(io.env)) return undefined;
  try {
    return await withTemporalSchedules(io.env, async (client, { desiredSchedules, readSchedules }) => {
      const planned = desiredSchedules(definition, connection, taskQueue);
      const observed = await readSchedules(client, definition.organization.name, planned.map((p) => p.id));
      return { changes: diffSchedules(planned, observed), planned, relevant: planned.length + observed.length > 0 };
    });
  } catch (error) {
    if (!needed && !temporalInUse && error instanceof ToolkitError && error.code === 'temporal_unreachable') {
      io.stderr(`warning: schedules not checked (the definition has none): ${error.message}`);
      return undefined;
    }
    throw error;
  }
}

/**
 * Applies a schedule plan on Temporal, calling `onChange` as each change completes. Output: the
 * applied changes. Errors: `temporal_unreachable`; Temporal's own.
 */
export async function applySchedulePlan(plan: SchedulePlan, io: CliIo, onChange?: (change: AppliedScheduleChange) => void): Promise<AppliedScheduleChange[]> {
  if (plan.changes.length === 0) return [];
  return withTemporalSchedules(io.env, (client, { applyScheduleChanges }) => applyScheduleChanges(client, plan.changes, plan.planned, onChange));
}
