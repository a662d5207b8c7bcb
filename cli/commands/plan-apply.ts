/** `teamctl validate`, `plan` and `apply`. */
import type { Command } from 'commander';
import { InvalidArgumentError, Option } from 'commander';
import ora from 'ora';
import { createApplyActivities } from '../../activities/apply-activities.ts';
import { applyLocally } from '../../engine/local-engine.ts';
import { applyWithTemporal } from '../../engine/temporal-engine.ts';
import { computePlan } from '../../plan/plan.ts';
import { DEFAULT_TASK_QUEUE, loadTemporalSettings } from '../../temporal/settings.ts';
import { DEFAULT_PARALLELISM, readObserved } from '../../workflows/apply-orchestration.ts';
import type { ApplyResult } from '../../workflows/apply-orchestration.ts';
import { loadApplyInput, loadDesired } from '../desired.ts';
import { ExitCodes } from '../errors.ts';
import type { CliIo } from '../io.ts';
import { plain, renderApplied, renderAppliedSchedule, renderApplySummary, renderPlan } from '../render.ts';
import { applySchedulePlan, readSchedulePlan } from '../schedule-plan.ts';
import type { Runner } from './runner.ts';

/** Engines of `apply`. */
export const Engines = { local: 'local', temporal: 'temporal' } as const;

/**
 * Adds `--base-url` and `--api-key-env` to a command and returns it. `--api-key-env` is
 * repeatable and collects the names, in order, into `opts.apiKeyEnv` (a `string[]`): the
 * organization keyring, whose first variable is the key and the others its fallbacks on a 401.
 * Absent, `opts.apiKeyEnv` is undefined and `resolveConnection` (`cli/context.ts`) applies the
 * default keyring, `ACS_API_KEY` then `ACS_API_KEY_NEXT`. Names are validated there
 * (`invalid_usage`).
 */
export function connectionOptions(command: Command): Command {
  return command
    .option('--base-url <url>', 'service base URL (default: $ACS_BASE_URL)')
    .option(
      '--api-key-env <name>',
      'environment variable holding the organization API key; repeat it for a keyring tried in order on a 401 (default: ACS_API_KEY, then ACS_API_KEY_NEXT)',
      (name: string, names: string[] | undefined) => [...(names ?? []), name],
    );
}

/** Parses a positive integer flag value. Raises commander's InvalidArgumentError (exit 1 with usage). */
export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`not a positive integer: ${value}`);
  return n;
}

/** Registers `validate`, `plan` and `apply` on the program. */
export function registerPlanApply(program: Command, io: CliIo, run: Runner): void {
  program
    .command('validate')
    .description('Check a definition file without contacting the service; problems are printed as FILE:LINE:COL: message.')
    .requiredOption('-f, --file <path>', 'definition file (YAML)')
    .action((opts: { file: string }) =>
      run(async () => {
        const desired = await loadDesired(opts.file, io.env, false);
        const counts = desired.teams.map((t) => `${t.name} (${t.agents.length} agents, ${t.humans.length} humans, ${t.edges.length} edges)`);
        const more = [
          desired.pipelines.length ? `; pipelines: ${desired.pipelines.map((p) => p.name).join(', ')}` : '',
          desired.schedules.length ? `; schedules: ${desired.schedules.map((s) => s.name).join(', ')}` : '',
        ].join('');
        io.stdout(`${opts.file}: valid. Organization ${desired.organization.name}; teams: ${counts.join(', ') || 'none'}${more}.`);
        return ExitCodes.ok;
      }),
    );

  connectionOptions(
    program
      .command('plan')
      .description(
        'Read the live state and print the changes apply would make: resources (create, update), then schedules on Temporal (create, update, delete). Sends no mutating request.',
      )
      .requiredOption('-f, --file <path>', 'definition file (YAML)')
      .option('--task-queue <name>', 'Temporal task queue scheduled runs go to (as apply would set it)', DEFAULT_TASK_QUEUE)
      .option('--json', 'print {"changes": [...]} as JSON, with "schedules": [...] when the organization has schedules (in the file or on Temporal)')
      .option('--detailed-exitcode', 'exit 0 when in sync, 2 when there are changes (schedules included), 1 on error'),
  ).action((opts: { file: string; taskQueue: string; json?: boolean; detailedExitcode?: boolean; baseUrl?: string; apiKeyEnv?: string[] }) =>
    run(async () => {
      const { input, definition } = await loadApplyInput(opts.file, opts, io.env);
      const schedules = await readSchedulePlan(definition, input.connection, opts.taskQueue, io);
      const observed = await readObserved(createApplyActivities({ env: io.env }), input.connection, input.desired);
      const plan = computePlan(input.desired, observed);
      const scheduleChanges = schedules?.changes ?? [];
      if (opts.json) io.stdout(JSON.stringify(schedules?.relevant ? { ...plan, schedules: scheduleChanges } : plan, null, 2));
      else io.stdout(renderPlan(plan.changes, scheduleChanges, io.style ?? plain));
      return opts.detailedExitcode && plan.changes.length + scheduleChanges.length > 0 ? ExitCodes.changes : ExitCodes.ok;
    }),
  );

  connectionOptions(
    program
      .command('apply')
      .description(
        'Make the live state match the definition: organization, provider keys, teams, agents, humans, edges; then its schedules on Temporal (created, updated, deleted when gone from the file). Idempotent; safe to re-run after an interruption.',
      )
      .requiredOption('-f, --file <path>', 'definition file (YAML)')
      .addOption(new Option('--engine <engine>', 'where the orchestration runs').choices(Object.values(Engines)).default(Engines.local))
      .option('--task-queue <name>', 'Temporal task queue of the apply (engine temporal) and of scheduled runs', DEFAULT_TASK_QUEUE)
      .addOption(new Option('--parallelism <n>', 'most changes in flight at once').argParser(positiveInt).default(DEFAULT_PARALLELISM))
      .option('--json', 'print the result as JSON'),
  ).action(
    (opts: { file: string; engine: keyof typeof Engines; taskQueue: string; parallelism: number; json?: boolean; baseUrl?: string; apiKeyEnv?: string[] }) =>
      run(async () => {
        const { input, definition } = await loadApplyInput(opts.file, opts, io.env);
        // Before any change: a definition with schedules and no reachable Temporal applies nothing.
        const schedules = await readSchedulePlan(definition, input.connection, opts.taskQueue, io, opts.engine === Engines.temporal);
        const spinner = io.isTTY && !opts.json ? ora({ text: `Applying ${opts.file}…`, stream: process.stderr }).start() : undefined;
        let result: ApplyResult;
        try {
          if (opts.engine === Engines.temporal) {
            result = await applyWithTemporal(input, { settings: loadTemporalSettings(io.env), taskQueue: opts.taskQueue });
          } else {
            result = await applyLocally(input, createApplyActivities({ env: io.env }), {
              onProgress: (change) => {
                if (opts.json) return;
                spinner?.clear();
                io.stdout(renderApplied(change));
                spinner?.render();
              },
            });
          }
        } finally {
          spinner?.stop();
        }
        if (!opts.json && opts.engine === Engines.temporal) result.applied.forEach((c) => io.stdout(renderApplied(c)));
        // Schedules live on Temporal whatever the engine; after the resources, which their runs need.
        const scheduled = schedules ? await applySchedulePlan(schedules, io, (c) => opts.json || io.stdout(renderAppliedSchedule(c))) : [];
        if (opts.json) io.stdout(JSON.stringify(schedules?.relevant ? { ...result, schedules: scheduled } : result, null, 2));
        else io.stdout(renderApplySummary(result.applied, result.omitted, scheduled));
        return ExitCodes.ok;
      }),
  );
}
