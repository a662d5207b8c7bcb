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
import { createApplyActivities } from '../activities/apply-activities.ts';
import { withRetries } from '../activities/retrying.ts';
import type { RetryOptions, RetryWait } from '../activities/retrying.ts';
import type { ProtectedResource } from '../api/schemas.ts';
import { locateInFile } from '../definitions/load.ts';
import { agentsWithoutKey, withoutKeyWarning } from '../definitions/provider-keys.ts';
import type { PathSegment } from '../definitions/problems.ts';
import type { Definition } from '../definitions/schema.ts';
import { applyLocally } from '../engine/local-engine.ts';
import { ToolkitError } from '../errors/catalogue.ts';
import { addressProblem, covers } from '../plan/addresses.ts';
import { previewsNeeded, withCascades } from '../plan/cascades.ts';
import type { ScheduleChange } from '../plan/schedules.ts';
import { protectedDeletes, protectionMessage } from '../plan/protection.ts';
import type { ProtectedLabel } from '../plan/protection.ts';
import type { Change, DeleteChange, ObservedState } from '../plan/types.ts';
import { refusedWebhookUrls, refusedWebhookUrlWarning } from '../plan/webhook-url-warnings.ts';
import { loadTemporalSettings } from '../temporal/settings.ts';
import type { AppliedScheduleChange } from '../temporal/schedules.ts';
import { planOf, readObserved } from '../workflows/apply-orchestration.ts';
import type { AppliedChange, ApplyInput, ApplyResult } from '../workflows/apply-orchestration.ts';
import type { ConnectionFlags } from './context.ts';
import { loadApplyInput } from './desired.ts';
import type { CliIo } from './io.ts';
import { plain, renderApplied, renderAppliedSchedule, renderApplySummary, renderPlan } from './render.ts';
import { applySchedulePlan, readSchedulePlan } from './schedule-plan.ts';
import type { SchedulePlan } from './schedule-plan.ts';
import { sayingWhenStopped } from './signals.ts';
import { startSpinner } from './spinner.ts';

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
  /**
   * How the run's calls are retried in this process (reads, then the local engine's changes): one
   * contact with the service for the whole run, and long waits shown on stderr.
   */
  retry: RetryOptions;
  /** The organization's id when it exists (read for the plan). */
  orgId?: string | undefined;
}

/** The line shown for a long wait before a next attempt: what is waited for, and why. */
export function waitLine(wait: RetryWait): string {
  const seconds = Math.max(1, Math.round(wait.delayMs / 1000));
  const why = wait.error instanceof Error ? wait.error.message : String(wait.error);
  return `waiting ${seconds} s before attempt ${wait.attempt + 1} of ${wait.maximumAttempts}: ${why}`;
}

/** Collects a repeatable flag's values. */
const collect = (value: string, values: string[] | undefined) => [...(values ?? []), value];

/**
 * Adds `--target ADDRESS` and `--exclude ADDRESS` (both repeatable, collected into `opts.target`
 * and `opts.exclude`) to a command and returns it. Addresses are checked by {@link prepare}.
 */
export function selectionOptions(command: Command): Command {
  return command
    .option('--target <address>', 'only this resource and what is under it (team/intake, team/intake/agent/triager, team/intake/edge/a,b, provider_key/openai, webhook/ops-feed, schedule/nightly), with what it depends on; repeatable', collect)
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
  const address = change.address;
  const targets = flags.target ?? [];
  return (targets.length === 0 || targets.some((t) => covers(t, address))) && !(flags.exclude ?? []).some((e) => covers(e, address));
}

/**
 * Loads the definition, reads the live state and schedules, and plans as the engine will (apply,
 * or `destroy`), with the cascade counts of each delete. Warns on stderr about a `--target` that
 * selects nothing, and (not for destroy) about agents whose provider will have no key in the
 * organization (`definitions/provider-keys.ts`). Errors: `invalid_definition`, `unresolved_secret` (apply only: destroy sets no
 * secret), `invalid_usage`, `temporal_unreachable` (a file with schedules), `deletion_protected`
 * (a delete would remove a protected resource: each named, with where the file names it),
 * `forbidden`/`in_use` (destroy of the key's own organization, or of one that provisioned others),
 * the service's. With `retryReads` (apply, destroy: the plan is about to be carried out) its reads
 * are retried under the engines' retry policy, a 429's or 503's Retry-After waited out, long waits
 * shown on stderr ({@link waitLine}), and a connection refused before the service first answered
 * not retried; `plan` reports the first failure at once.
 */
export async function prepare(
  flags: PlanFlags,
  io: CliIo,
  options: { destroy?: boolean; engine?: Engine; retryReads?: boolean } = {},
): Promise<PreparedPlan> {
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
  const reads = createApplyActivities({ env: io.env });
  // A refused connection before the service ever answered ends the run at once (as plan does);
  // after, it is a restart and is waited out, each long wait shown.
  const retry: RetryOptions = { contact: { answered: false }, onWait: (wait) => io.stderr(waitLine(wait)) };
  const acts = options.retryReads ? withRetries(reads, retry) : reads;
  const observed = await readObserved(acts, input.connection, input.desired, input.parallelism, !destroy);
  const planned = planOf(input, observed);
  const refused = protectedDeletes(planned.filter((c): c is DeleteChange => c.action === 'delete'), observed);
  if (refused.length > 0) throw new ToolkitError('deletion_protected', protectionMessage(refused, await fileLabels(flags.file, definition, observed, refused)));
  const previews = await acts.readDeletionPreviews({ connection: input.connection, ...previewsNeeded(planned) });
  if (previews.organizationRefusal) {
    throw new ToolkitError(previews.organizationRefusal.code, `cannot destroy organization ${definition.organization.name}: ${previews.organizationRefusal.message}; nothing was changed`);
  }
  const changes = withCascades(planned, previews);
  if (!destroy) {
    // Keys the plan leaves in place count as the file's own (a key excluded from the plan, say).
    const kept = observed.providerKeys.map((k) => k.provider).filter((p) => !changes.some((c) => c.action === 'delete' && c.kind === 'provider_key' && c.name === p));
    for (const entry of agentsWithoutKey(definition, kept)) io.stderr(withoutKeyWarning(entry));
    // A webhook URL the service will refuse, said before apply sends it (judged without DNS).
    for (const entry of refusedWebhookUrls(changes)) {
      const index = definition.organization.webhooks?.findIndex((hook) => hook.name === entry.name) ?? -1;
      const at = index >= 0 ? await locateInFile(flags.file, ['organization', 'webhooks', index, 'url']) : undefined;
      io.stderr(refusedWebhookUrlWarning(entry, at));
    }
  }
  const scheduleChanges = (schedules?.changes ?? []).filter((c) => scheduleSelected(c, flags));
  for (const target of flags.target ?? []) {
    const matches = changes.some((c) => covers(target, c.address)) || scheduleChanges.some((c) => covers(target, c.address));
    if (!matches) io.stderr(`warning: --target ${target} selects no change`);
  }
  return { input, definition, changes, schedules: schedules && { ...schedules, changes: scheduleChanges }, retry, orgId: observed.organization?.org_id };
}

/**
 * Labels for the protected resources of a refused plan, with where the file names each
 * (`agent triager (team.yaml:14:11)`); a participant the file does not name is placed by its
 * team's entry, when the file still names the team.
 */
async function fileLabels(file: string, definition: Definition, observed: ObservedState, refused: ReadonlyArray<{ protected: ProtectedResource[] }>): Promise<ProtectedLabel> {
  const teamOf = new Map(observed.teams.flatMap((t) => [...t.agents.map((a) => a.agent_id), ...t.humans.map((h) => h.human_id)].map((id) => [id, t.team.team_name] as const)));
  const labels = new Map<string, string>();
  for (const resource of refused.flatMap((r) => r.protected)) {
    let path: PathSegment[] | undefined;
    let note = '';
    if (resource.kind === 'organization') path = ['organization', 'name'];
    const teamName = resource.kind === 'team' ? resource.name : teamOf.get(resource.id);
    const t = definition.teams.findIndex((team) => team.name === teamName);
    if (resource.kind === 'team' && t >= 0) path = ['teams', t, 'name'];
    if ((resource.kind === 'agent' || resource.kind === 'human') && t >= 0) {
      const team = definition.teams[t];
      const a = team?.agents.findIndex((x) => x.name === resource.name) ?? -1;
      const h = team?.humans.findIndex((x) => x.name === resource.name) ?? -1;
      path = a >= 0 ? ['teams', t, 'agents', a, 'name'] : h >= 0 ? ['teams', t, 'humans', h, 'name'] : ['teams', t, 'name'];
      if (a < 0 && h < 0) note = `its team ${teamName} at `;
    }
    const at = path && (await locateInFile(file, path));
    labels.set(resource.id, `${resource.kind} ${resource.name}${at ? ` (${note}${at})` : ''}`);
  }
  return (resource) => labels.get(resource.id) ?? `${resource.kind} ${resource.name}`;
}

/** The number of deletes of a prepared plan, resources and schedules together. */
export function deleteCount(plan: PreparedPlan): number {
  return plan.changes.filter((c) => c.action === 'delete').length + (plan.schedules?.changes.filter((c) => c.action === 'delete').length ?? 0);
}

/**
 * Consent to a plan's deletes (see the module's comment). Output: what the orchestration may
 * delete (`approvedDeletes`). Prints the plan before asking; with `--json` to stderr, keeping
 * stdout for the result. Errors: `not_approved` (nothing changed) with no terminal and no
 * `--auto-approve`, an answer other than `yes`, or Ctrl-C at the question.
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
  let answer: string;
  try {
    answer = await io.ask(`\n${question}\n  Only 'yes' will be accepted to confirm.\n\n  Enter a value: `);
  } catch (error) {
    // Ctrl-C at the question (readline rejects with an AbortError): a no, said so.
    if (error instanceof Error && error.name === 'AbortError') {
      io.stderr('');
      throw new ToolkitError('not_approved', 'the question was interrupted (Ctrl-C): nothing was changed');
    }
    throw error;
  }
  if (answer.trim() !== 'yes') throw new ToolkitError('not_approved', `${JSON.stringify(answer.trim())} is not yes: nothing was changed`);
  return ids;
}

/** The addresses a plan deletes, for messages (the first ten). */
function deletedAddresses(plan: PreparedPlan): string {
  const all = [...plan.changes.flatMap((c) => (c.action === 'delete' ? [c.address] : [])), ...(plan.schedules?.changes.flatMap((c) => (c.action === 'delete' ? [c.address] : [])) ?? [])];
  return all.length > 10 ? `${all.slice(0, 10).join(', ')}, …` : all.join(', ');
}

/**
 * Runs a prepared plan's input on an engine, printing each change as it completes (the local
 * engine live, Temporal's at the end), then makes its schedule changes on Temporal. A plan without
 * resource changes for an existing organization runs on no engine (its result is empty). Output: the
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
  const spinner = flags.json ? undefined : startSpinner(io, `Applying ${plan.definition.organization.name}…`);
  const made: AppliedChange[] = [];
  const scheduled: AppliedScheduleChange[] = [];
  // Ctrl-C (or SIGTERM) ends the command with the usual status, saying first what was done.
  let stopped: (signal: NodeJS.Signals) => string = (signal) => interruptedLine(signal, plan, made, scheduled);
  return sayingWhenStopped(
    async () => {
      let result: ApplyResult;
      try {
        if (plan.changes.length === 0 && plan.orgId !== undefined) {
          // Nothing to change (the plan just read the live state): no second read, and on
          // Temporal no workflow, whose start and end alone take longer than a no-op's reads. As
          // `terraform apply` does when its plan is empty.
          result = { orgId: plan.orgId, applied: [] };
        } else if (flags.engine === Engines.temporal) {
          // Temporal's client loads only for --engine temporal (0.2–0.3 s of start-up otherwise).
          const { applyWithTemporal, applyWorkflowId } = await import('../engine/temporal-engine.ts');
          const workflowId = applyWorkflowId(plan.definition.organization.name);
          stopped = (signal) =>
            `${interruptedBy(signal)}: this command stopped waiting, but the ${plan.input.destroy ? 'destroy' : 'apply'} goes on in Temporal workflow ${workflowId} (temporal workflow describe --workflow-id ${workflowId}); the same command run again once it ended converges.`;
          result = await applyWithTemporal(input, {
            settings: loadTemporalSettings(io.env),
            taskQueue: flags.taskQueue,
            onWait: (text) => {
              spinner?.clear();
              io.stderr(text);
              spinner?.render();
            },
          });
        } else {
          // Long waits shown above the spinner, which is drawn again below them.
          const onWait = (wait: RetryWait) => {
            spinner?.clear();
            io.stderr(waitLine(wait));
            spinner?.render();
          };
          result = await applyLocally(input, createApplyActivities({ env: io.env, onRetryWait: onWait }), {
            retry: { ...plan.retry, onWait },
            onProgress: (change) => {
              made.push(change);
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
      made.splice(0, made.length, ...result.applied);
      stopped = (signal) => interruptedLine(signal, plan, made, scheduled);
      // Schedules live on Temporal whatever the engine; after the resources, which their runs need.
      if (plan.schedules) {
        await applySchedulePlan(plan.schedules, io, (c) => {
          scheduled.push(c);
          if (!flags.json) io.stdout(renderAppliedSchedule(c));
        });
      }
      return { result, scheduled };
    },
    (signal) => {
      spinner?.stop();
      io.stderr(stopped(signal));
    },
  );
}

/** `interrupted by Ctrl-C (SIGINT)`, `interrupted by SIGTERM`. */
function interruptedBy(signal: NodeJS.Signals): string {
  return signal === 'SIGINT' ? 'interrupted by Ctrl-C (SIGINT)' : `interrupted by ${signal}`;
}

/**
 * The line an apply or destroy cut short by a signal ends with: how many of the plan's changes it
 * made, by outcome, and that running it again converges (each change is idempotent by business
 * key: what was made is found, not made twice; a change in flight may have been made too).
 */
export function interruptedLine(signal: NodeJS.Signals, plan: PreparedPlan, made: readonly AppliedChange[], scheduled: readonly AppliedScheduleChange[]): string {
  const planned = plan.changes.length + (plan.schedules?.changes.length ?? 0);
  const done = made.length + scheduled.length;
  const outcomes = (['created', 'updated', 'deleted'] as const)
    .map((outcome) => [outcome, made.filter((c) => c.outcome === outcome).length + scheduled.filter((c) => c.outcome === outcome).length] as const)
    .filter(([, n]) => n > 0)
    .map(([outcome, n]) => `${n} ${outcome}`);
  const what =
    done === 0
      ? 'before any change was finished (one in flight may have been made)'
      : `after ${done} of ${planned} change${planned === 1 ? '' : 's'} (${[...outcomes, 'one in flight may have been made too'].join(', ')})`;
  const verb = plan.input.destroy ? 'destroy' : 'apply';
  return `${interruptedBy(signal)} ${what}. Nothing is made twice: run the same ${verb} again and it converges, making only what is left.`;
}

/** Prints an apply's or destroy's result: `--json` as `{orgId, applied, schedules?}`, else the summary line. */
export function printResult(plan: PreparedPlan, outcome: { result: ApplyResult; scheduled: AppliedScheduleChange[] }, json: boolean | undefined, io: CliIo): void {
  if (json) io.stdout(JSON.stringify(plan.schedules?.relevant ? { ...outcome.result, schedules: outcome.scheduled } : outcome.result, null, 2));
  else io.stdout(renderApplySummary(outcome.result.applied, outcome.result.omitted, outcome.scheduled, plan.input.destroy ? 'Destroy' : 'Apply'));
}
