/**
 * What `plan`, `apply` and `destroy` share: reading the live state and planning exactly as the
 * orchestration will (`planOf`), with `--target`/`--exclude`, the cascade counts of each delete and
 * the schedules; asking for consent to delete; running the plan on an engine.
 *
 * Consent (Terraform's and kubectl's habit): creates and updates need none. A plan that deletes —
 * resources or schedules — is shown, and on a terminal the user types `yes`; with no terminal it
 * is refused (`not_approved`, exit 1, nothing changed) unless `--auto-approve` is given. The
 * deletes approved are passed to the orchestration by id, so a delete that appears between the
 * plan shown and the plan the engine makes (the live state changed) is refused, not made.
 */
import type { Command } from 'commander';
import ora from 'ora';
import { createApplyActivities } from '../activities/apply-activities.ts';
import type { Definition } from '../definitions/schema.ts';
import { applyLocally } from '../engine/local-engine.ts';
import { applyWithTemporal } from '../engine/temporal-engine.ts';
import { ToolkitError } from '../errors/catalogue.ts';
import { addressProblem, covers, scheduleAddress } from '../plan/addresses.ts';
import { previewsNeeded, withCascades } from '../plan/cascades.ts';
import type { ScheduleChange } from '../plan/schedules.ts';
import type { Change } from '../plan/types.ts';
import { loadTemporalSettings } from '../temporal/settings.ts';
import type { AppliedScheduleChange } from '../temporal/schedules.ts';
import { planOf, readObserved } from '../workflows/apply-orchestration.ts';
import type { ApplyInput, ApplyResult } from '../workflows/apply-orchestration.ts';
import type { ConnectionFlags } from './context.ts';
import { loadApplyInput } from './desired.ts';
import type { CliIo } from './io.ts';
import { plain, renderApplied, renderAppliedSchedule, renderApplySummary, renderPlan } from './render.ts';
import { applySchedulePlan, readSchedulePlan } from './schedule-plan.ts';
import type { SchedulePlan } from './schedule-plan.ts';

/** Engines of `apply` and `destroy`. */
export const Engines = { local: 'local', temporal: 'temporal' } as const;
export type Engine = keyof typeof Engines;

/** Flags of the commands that plan: the file, the connection, the selection. */
export interface PlanFlags extends ConnectionFlags {
  file: string;
  taskQueue: string;
  target?: string[];
  exclude?: string[];
  parallelism?: number;
}

/** A plan as the CLI shows it and the engine will make it. */
export interface PreparedPlan {
  input: ApplyInput;
  definition: Definition;
  /** The resource changes, selected, deletes with their cascade counts. */
  changes: Change[];
  /** The schedule plan, its changes selected; undefined when schedules are not looked at. */
  schedules: SchedulePlan | undefined;
}

/** Collects a repeatable flag's values. */
const collect = (value: string, values: string[] | undefined) => [...(values ?? []), value];

/**
 * Adds `--target ADDRESS` and `--exclude ADDRESS` (both repeatable, collected into `opts.target`
 * and `opts.exclude`) to a command and returns it. Addresses are checked by {@link prepare}.
 */
export function selectionOptions(command: Command): Command {
  return command
    .option('--target <address>', 'only this resource and what is under it (team/intake, team/intake/agent/triager, team/intake/edge/a,b, provider_key/openai, schedule/nightly), with what it depends on; repeatable', collect)
    .option('--exclude <address>', 'not this resource, what is under it, nor what depends on it; repeatable', collect);
}

/** Checks `--target`/`--exclude` addresses. Errors: `invalid_usage` naming the flag, the address and what is expected. */
function checkAddresses(flag: string, addresses: readonly string[]): void {
  for (const address of addresses) {
    const problem = addressProblem(address);
    if (problem) throw new ToolkitError('invalid_usage', `${flag} ${address}: ${problem}`);
  }
}

/** Whether a schedule change is selected by `--target`/`--exclude` (schedules depend on nothing). */
function scheduleSelected(change: ScheduleChange, flags: Pick<PlanFlags, 'target' | 'exclude'>): boolean {
  const address = scheduleAddress(change.name);
  const targets = flags.target ?? [];
  return (targets.length === 0 || targets.some((t) => covers(t, address))) && !(flags.exclude ?? []).some((e) => covers(e, address));
}

/**
 * Loads the definition, reads the live state and schedules, and plans as the engine will (apply,
 * or `destroy`), with the cascade counts of each delete. Warns on stderr about a `--target` that
 * selects nothing. Errors: `invalid_definition`, `unresolved_secret` (apply only: destroy sets no
 * secret), `invalid_usage`, `temporal_unreachable` (a file with schedules), the service's.
 */
export async function prepare(flags: PlanFlags, io: CliIo, options: { destroy?: boolean; engine?: Engine } = {}): Promise<PreparedPlan> {
  checkAddresses('--target', flags.target ?? []);
  checkAddresses('--exclude', flags.exclude ?? []);
  const destroy = options.destroy ?? false;
  const loaded = await loadApplyInput(flags.file, flags, io.env, { checkSecrets: !destroy });
  const input: ApplyInput = {
    ...loaded.input,
    ...(flags.target?.length ? { targets: flags.target } : {}),
    ...(flags.exclude?.length ? { excludes: flags.exclude } : {}),
    ...(destroy ? { destroy } : {}),
  };
  const definition = loaded.definition;
  // Destroy removes every schedule of the organization; Temporal must answer when the file has some.
  const scheduled = destroy ? { ...definition, schedules: [] } : definition;
  const temporalNeeded = options.engine === Engines.temporal || (destroy && definition.schedules.length > 0);
  const schedules = await readSchedulePlan(scheduled, input.connection, flags.taskQueue, io, temporalNeeded);
  const acts = createApplyActivities({ env: io.env });
  const observed = await readObserved(acts, input.connection, input.desired, input.parallelism, !destroy);
  const planned = planOf(input, observed);
  const changes = withCascades(planned, await acts.readDeletionPreviews({ connection: input.connection, ...previewsNeeded(planned) }));
  const scheduleChanges = (schedules?.changes ?? []).filter((c) => scheduleSelected(c, flags));
  for (const target of flags.target ?? []) {
    const matches = changes.some((c) => covers(target, c.address)) || scheduleChanges.some((c) => covers(target, scheduleAddress(c.name)));
    if (!matches) io.stderr(`warning: --target ${target} selects no change`);
  }
  return { input, definition, changes, schedules: schedules && { ...schedules, changes: scheduleChanges } };
}

/** The number of deletes of a prepared plan, resources and schedules together. */
export function deleteCount(plan: PreparedPlan): number {
  return plan.changes.filter((c) => c.action === 'delete').length + (plan.schedules?.changes.filter((c) => c.action === 'delete').length ?? 0);
}

/**
 * Consent to a plan's deletes (see the module's comment). Output: what the orchestration may
 * delete (`approvedDeletes`). Prints the plan before asking; with `--json` to stderr, keeping
 * stdout for the result. Errors: `not_approved` (nothing changed) with no terminal and no
 * `--auto-approve`, or an answer other than `yes`.
 */
export async function consent(plan: PreparedPlan, flags: { autoApprove?: boolean; json?: boolean }, io: CliIo, question: string): Promise<ApplyInput['approvedDeletes']> {
  const deletes = deleteCount(plan);
  if (flags.autoApprove) return 'all';
  const ids = plan.changes.flatMap((c) => (c.action === 'delete' ? [c.id] : []));
  if (deletes === 0) return ids;
  if (!io.ask) {
    throw new ToolkitError('not_approved', `the plan deletes ${deletes} resource${deletes === 1 ? '' : 's'} (${deletedAddresses(plan)}) and there is no terminal to confirm it on; nothing was changed`);
  }
  const show = flags.json ? io.stderr : io.stdout;
  show(renderPlan(plan.changes, plan.schedules?.changes ?? [], flags.json ? plain : (io.style ?? plain)));
  const answer = await io.ask(`\n${question}\n  Only 'yes' will be accepted to confirm.\n\n  Enter a value: `);
  if (answer.trim() !== 'yes') throw new ToolkitError('not_approved', `${JSON.stringify(answer.trim())} is not yes: nothing was changed`);
  return ids;
}

/** The addresses a plan deletes, for messages (the first ten). */
function deletedAddresses(plan: PreparedPlan): string {
  const all = [...plan.changes.flatMap((c) => (c.action === 'delete' ? [c.address] : [])), ...(plan.schedules?.changes.flatMap((c) => (c.action === 'delete' ? [scheduleAddress(c.name)] : [])) ?? [])];
  return all.length > 10 ? `${all.slice(0, 10).join(', ')}, …` : all.join(', ');
}

/**
 * Runs a prepared plan's input on an engine, printing each change as it completes (the local
 * engine live, Temporal's at the end), then makes its schedule changes on Temporal. Output: the
 * result and the schedule changes made. Errors: the engine's (`not_approved` when the live state
 * changed since consent, `temporal_unreachable`, `no_worker`, `apply_in_progress`, an activity's
 * code).
 */
export async function runPlan(
  plan: PreparedPlan,
  input: ApplyInput,
  flags: { engine: Engine; taskQueue: string; json?: boolean },
  io: CliIo,
): Promise<{ result: ApplyResult; scheduled: AppliedScheduleChange[] }> {
  const spinner = io.isTTY && !flags.json ? ora({ text: `Applying ${plan.definition.organization.name}…`, stream: process.stderr }).start() : undefined;
  let result: ApplyResult;
  try {
    if (flags.engine === Engines.temporal) {
      result = await applyWithTemporal(input, { settings: loadTemporalSettings(io.env), taskQueue: flags.taskQueue });
    } else {
      result = await applyLocally(input, createApplyActivities({ env: io.env }), {
        onProgress: (change) => {
          if (flags.json) return;
          spinner?.clear();
          io.stdout(renderApplied(change));
          spinner?.render();
        },
      });
    }
  } finally {
    spinner?.stop();
  }
  if (!flags.json && flags.engine === Engines.temporal) result.applied.forEach((c) => io.stdout(renderApplied(c)));
  // Schedules live on Temporal whatever the engine; after the resources, which their runs need.
  const scheduled = plan.schedules ? await applySchedulePlan(plan.schedules, io, (c) => flags.json || io.stdout(renderAppliedSchedule(c))) : [];
  return { result, scheduled };
}

/** Prints an apply's or destroy's result: `--json` as `{orgId, applied, schedules?}`, else the summary line. */
export function printResult(plan: PreparedPlan, outcome: { result: ApplyResult; scheduled: AppliedScheduleChange[] }, json: boolean | undefined, io: CliIo): void {
  if (json) io.stdout(JSON.stringify(plan.schedules?.relevant ? { ...outcome.result, schedules: outcome.scheduled } : outcome.result, null, 2));
  else io.stdout(renderApplySummary(outcome.result.applied, outcome.result.omitted, outcome.scheduled, plan.input.destroy ? 'Destroy' : 'Apply'));
}
