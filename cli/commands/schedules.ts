/**
 * `teamctl schedules list | describe | trigger | pause | unpause | backfill`: an organization's
 * scheduled pipeline runs, which are Temporal Schedules that `apply` made from `schedules:`.
 *
 * Pausing here lasts until the next `apply` of the definition: apply sets every schedule as its
 * `paused:` says (default false), so a schedule paused by hand is unpaused by an apply of a file
 * that says `paused: false`, and one unpaused by hand is paused again by a file that says `true`.
 */
import type { Command } from 'commander';
import { Option } from 'commander';
import type { Client } from '@temporalio/client';
import { OverlapPolicies } from '../../definitions/pipeline-schema.ts';
import type { OverlapPolicy } from '../../definitions/pipeline-schema.ts';
import type { Definition } from '../../definitions/schema.ts';
import { ToolkitError } from '../../errors/catalogue.ts';
import type { ScheduleView } from '../../temporal/schedules.ts';
import { loadDesired } from '../desired.ts';
import { withTemporalSchedules, type ScheduleHelpers } from '../schedule-plan.ts';
import { ExitCodes } from '../errors.ts';
import type { CliIo } from '../io.ts';
import type { Runner } from './runner.ts';

/** Flags that name the organization. */
interface OrgFlags {
  file?: string;
  org?: string;
}

/** Adds `-f FILE` and `--org NAME` to a subcommand. */
function orgOptions(command: Command): Command {
  return command
    .option('-f, --file <path>', 'definition file (YAML): its organization')
    .option('--org <name>', 'organization name (instead of -f)');
}

/**
 * A time as people in `timeZone` read it: `2026-11-24 02:00:00 CET`. Input: an instant and an
 * IANA zone. Output: the text (through `Intl.DateTimeFormat`, so daylight saving is right).
 */
export function formatInZone(date: Date, timeZone: string): string {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hourCycle: 'h23',
    timeZoneName: 'short',
  }).formatToParts(date);
  const get = (type: Intl.DateTimeFormatPartTypes) => parts.find((p) => p.type === type)?.value ?? '';
  return `${get('year')}-${get('month')}-${get('day')} ${get('hour')}:${get('minute')}:${get('second')} ${get('timeZoneName')}`;
}

/** ISO 8601 with a date, and a time only with its offset: `2026-11-01`, `2026-11-01T02:00Z`, `…T02:00:00+01:00`. */
const ISO_8601 = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2}))?$/;

/**
 * Parses a `--from`/`--to` time: ISO 8601, a date alone meaning midnight UTC, a time only with
 * `Z` or an offset (a time without one would depend on this machine's zone). Output: the instant.
 * Errors: `invalid_usage` naming the flag.
 */
export function parseInstant(flag: string, text: string): Date {
  const date = new Date(text);
  if (!ISO_8601.test(text) || Number.isNaN(date.getTime())) {
    const hint = /T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(text) ? ' (add Z or an offset such as +01:00)' : '';
    throw new ToolkitError('invalid_usage', `${flag}: not an ISO 8601 time${hint}: ${JSON.stringify(text)}; e.g. 2026-11-01 or 2026-11-01T02:00:00Z`);
  }
  return date;
}

/** The view as JSON: the times also in the schedule's zone. */
function viewDocument(view: ScheduleView) {
  return { ...view, next_runs_local: view.next_runs.map((t) => formatInZone(new Date(t), view.timezone)) };
}

/** One line of `schedules list`: a paused schedule has no next run to show (its state says why). */
function listLine(view: ScheduleView): string {
  const next = view.paused ? '' : `  ${view.next_runs[0] ? `next ${formatInZone(new Date(view.next_runs[0]), view.timezone)}` : 'no next run'}`;
  return `${view.name}  ${view.paused ? 'paused' : 'active'}  ${view.spec} (${view.timezone})  pipeline ${view.pipeline ?? '?'}${next}`;
}

/** `schedules describe`'s text. */
function describeLines(view: ScheduleView): string[] {
  const local = (iso: string) => formatInZone(new Date(iso), view.timezone);
  return [
    `schedule ${view.name} (${view.id})${view.managed ? '' : ' — not made by teamctl apply'}`,
    `  pipeline:    ${view.pipeline ?? '?'}`,
    `  when:        ${view.spec} in ${view.timezone}`,
    `  overlap:     ${view.overlap}${view.catchup_window ? `; catch-up window ${view.catchup_window}` : ''}`,
    `  state:       ${view.paused ? 'paused' : 'active'}${view.note ? ` (${view.note})` : ''}`,
    `  inputs:      ${JSON.stringify(view.inputs ?? {})}`,
    `  task queue:  ${view.task_queue ?? '?'}`,
    `  next runs:   ${view.paused ? '(paused)' : view.next_runs.slice(0, 5).map(local).join(', ') || 'none'}`,
    `  runs so far: ${view.actions_taken}`,
    ...view.recent_runs.map((r) => `    ${local(r.scheduled_at)}  ${r.run_id}`),
    ...(view.running.length ? [`  running:     ${view.running.join(', ')}`] : []),
  ];
}

/** Registers `schedules` and its subcommands on the program. */
export function registerSchedules(program: Command, io: CliIo, run: Runner): void {
  const schedules = program
    .command('schedules')
    .description('Scheduled pipeline runs (Temporal Schedules made by apply from `schedules:`): list, describe, trigger, pause, unpause, backfill.');

  /** The organization named by -f or --org, and the definition when -f. Errors: `invalid_usage`, `invalid_definition`. */
  async function organizationOf(opts: OrgFlags): Promise<{ organization: string; definition?: Definition }> {
    if (opts.file && opts.org) throw new ToolkitError('invalid_usage', 'give -f FILE or --org NAME, not both');
    if (opts.org) return { organization: opts.org };
    if (!opts.file) throw new ToolkitError('invalid_usage', 'name the organization: -f FILE (its definition) or --org NAME');
    const definition = await loadDesired(opts.file, io.env, false);
    return { organization: definition.organization.name, definition };
  }

  const withClient = <T>(fn: (client: Client, helpers: ScheduleHelpers) => Promise<T>) => withTemporalSchedules(io.env, fn);

  orgOptions(schedules.command('list').description("List the organization's schedules: state, when, pipeline and next run in the schedule's own time zone."))
    .option('--json', 'print {"schedules": [...]} as JSON')
    .action((opts: OrgFlags & { json?: boolean }) =>
      run(async () => {
        const { organization } = await organizationOf(opts);
        const views = await withClient(async (client, { listScheduleIds, scheduleNameOf, scheduleView }) => {
          const found: ScheduleView[] = [];
          for (const id of await listScheduleIds(client, organization)) {
            const description = await client.schedule.getHandle(id).describe().catch(() => undefined);
            if (description) found.push(scheduleView(description, scheduleNameOf(id, organization)!));
          }
          return found;
        });
        if (opts.json) io.stdout(JSON.stringify({ schedules: views.map(viewDocument) }, null, 2));
        else if (views.length === 0) io.stdout(`Organization ${organization} has no schedules.`);
        else views.forEach((v) => io.stdout(listLine(v)));
        return ExitCodes.ok;
      }),
    );

  orgOptions(
    schedules
      .command('describe')
      .description("Show a schedule: pipeline, when, overlap, state and note, inputs, next runs in its own time zone, recent runs.")
      .argument('<name>', 'schedule name'),
  )
    .option('--json', 'print the schedule as JSON (times in UTC, next_runs_local in its zone)')
    .action((name: string, opts: OrgFlags & { json?: boolean }) =>
      run(async () => {
        const { organization } = await organizationOf(opts);
        const view = await withClient(async (client, { findSchedule, scheduleView }) => scheduleView((await findSchedule(client, organization, name)).description, name));
        if (opts.json) io.stdout(JSON.stringify(viewDocument(view), null, 2));
        else describeLines(view).forEach((line) => io.stdout(line));
        return ExitCodes.ok;
      }),
    );

  orgOptions(
    schedules
      .command('trigger')
      .description('Start a run of the schedule now, whatever its overlap policy and even when paused (a worker on its task queue runs it).')
      .argument('<name>', 'schedule name'),
  ).action((name: string, opts: OrgFlags) =>
    run(async () => {
      const { organization } = await organizationOf(opts);
      const { pipeline, runId } = await withClient(async (client, { findSchedule, OVERLAP, scheduledRunId, scheduleView }) => {
        const { handle, description } = await findSchedule(client, organization, name);
        await handle.trigger(OVERLAP.allow_all);
        return { pipeline: scheduleView(description, name).pipeline, runId: scheduledRunId(organization, name) };
      });
      io.stdout(`Triggered schedule ${name}: a run of pipeline ${pipeline ?? '?'} starts as ${runId}-<time>.`);
      io.stderr(`Follow it with: teamctl runs list --org ${organization}`);
      return ExitCodes.ok;
    }),
  );

  for (const paused of [true, false]) {
    const verb = paused ? 'pause' : 'unpause';
    orgOptions(
      schedules
        .command(verb)
        .description(
          paused
            ? 'Pause a schedule: no run starts until it is unpaused (trigger still works). The next apply sets it back as its definition says (paused:).'
            : 'Unpause a schedule. The next apply sets it back as its definition says (paused:).',
        )
        .argument('<name>', 'schedule name'),
    )
      .option('--note <text>', `why it is ${paused ? 'paused' : 'unpaused'} (shown by describe)`)
      .action((name: string, opts: OrgFlags & { note?: string }) =>
        run(async () => {
          const { organization, definition } = await organizationOf(opts);
          await withClient(async (client, { findSchedule }) => {
            const { handle } = await findSchedule(client, organization, name);
            const note = opts.note ?? `${paused ? 'paused' : 'unpaused'} with teamctl schedules ${verb}`;
            await (paused ? handle.pause(note) : handle.unpause(note));
          });
          io.stdout(`${paused ? 'Paused' : 'Unpaused'} schedule ${name}.`);
          const inFile = definition?.schedules.find((s) => s.name === name)?.paused;
          if (inFile === undefined) io.stderr(`Note: the next teamctl apply of the definition sets it as its paused: says (default false).`);
          else if (inFile !== paused) io.stderr(`Note: ${opts.file} says paused: ${inFile}; the next apply of it ${inFile ? 'pauses' : 'unpauses'} the schedule again.`);
          return ExitCodes.ok;
        }),
      );
  }

  orgOptions(
    schedules
      .command('backfill')
      .description('Take the runs the schedule would have started between two times, now (e.g. after an outage longer than the catch-up window).')
      .argument('<name>', 'schedule name'),
  )
    .requiredOption('--from <time>', 'start, ISO 8601: 2026-11-01 (midnight UTC) or 2026-11-01T02:00:00+01:00')
    .requiredOption('--to <time>', 'end, ISO 8601, after --from')
    .addOption(new Option('--overlap <policy>', "overlap policy of the backfilled runs (default: the schedule's)").choices(OverlapPolicies))
    .action((name: string, opts: OrgFlags & { from: string; to: string; overlap?: OverlapPolicy }) =>
      run(async () => {
        const start = parseInstant('--from', opts.from);
        const end = parseInstant('--to', opts.to);
        if (end.getTime() <= start.getTime()) throw new ToolkitError('invalid_usage', `--to (${opts.to}) must be after --from (${opts.from})`);
        const { organization } = await organizationOf(opts);
        const timezone = await withClient(async (client, { findSchedule, OVERLAP }) => {
          const { handle, description } = await findSchedule(client, organization, name);
          await handle.backfill({ start, end, ...(opts.overlap ? { overlap: OVERLAP[opts.overlap] } : {}) });
          return description.spec.timezone ?? 'UTC';
        });
        io.stdout(`Backfill of schedule ${name} requested: the runs due from ${formatInZone(start, timezone)} to ${formatInZone(end, timezone)} start now, as the overlap policy allows.`);
        return ExitCodes.ok;
      }),
    );
}
