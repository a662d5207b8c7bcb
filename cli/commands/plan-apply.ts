/** `teamctl plan` and `apply` (what they share with `destroy`: `cli/lifecycle.ts`). */
import type { Command } from 'commander';
import { InvalidArgumentError, Option } from 'commander';
import { DEFAULT_TASK_QUEUE } from '../../temporal/settings.ts';
import { DEFAULT_PARALLELISM } from '../../workflows/apply-orchestration.ts';
import { ExitCodes } from '../errors.ts';
import type { CliIo } from '../io.ts';
import { consent, Engines, prepare, printResult, runPlan, selectionOptions } from '../lifecycle.ts';
import type { Engine, PlanFlags } from '../lifecycle.ts';
import { counted, plain, renderPlan } from '../render.ts';
import { cardJson, readRemoteCards, showRemoteCards } from '../remote-cards.ts';
import type { Runner } from './runner.ts';

export { Engines } from '../lifecycle.ts';

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

/** Registers `plan` and `apply` on the program (`validate` is `validate.ts`). */
export function registerPlanApply(program: Command, io: CliIo, run: Runner): void {
  selectionOptions(
    connectionOptions(
      program
        .command('plan')
        .description(
          'Read the live state and print the changes apply would make: creates (with their fields), updates (live -> desired: drift shows here), deletes of what the definition no longer names (with what each takes along), renames; then schedules on Temporal; then each remote A2A agent\'s card name and skills (a card that cannot be read is a warning). Sends no mutating request.',
        )
        .requiredOption('-f, --file <path>', 'definition file (YAML)')
        .option('--task-queue <name>', 'Temporal task queue scheduled runs go to (as apply would set it)', DEFAULT_TASK_QUEUE)
        .option('--json', 'print {"changes": [...]} as JSON, with "schedules": [...] when the organization has schedules (in the file or on Temporal), and "remote_agents": [...] (each remote A2A agent\'s card, or its problem) when the file has remote agents')
        .option('--detailed-exitcode', 'exit 0 when in sync, 2 when there are changes (deletes and schedules included), 1 on error'),
    ),
  ).action((opts: PlanFlags & { json?: boolean; detailedExitcode?: boolean }) =>
    run(async () => {
      const plan = await prepare(opts, io);
      const schedules = plan.schedules?.changes ?? [];
      // Remote A2A agents' cards: shown, never a failure of the plan (apply refuses a bad one).
      const cards = await readRemoteCards(plan.definition, io);
      if (opts.json) {
        const remote = cards.length > 0 ? { remote_agents: cards.map(cardJson) } : {};
        io.stdout(JSON.stringify(plan.schedules?.relevant ? { changes: plan.changes, schedules, ...remote } : { changes: plan.changes, ...remote }, null, 2));
        await showRemoteCards(opts.file, cards, io, () => {});
      } else {
        io.stdout(renderPlan(plan.changes, schedules, io.style ?? plain));
        await showRemoteCards(opts.file, cards, io, io.stdout);
      }
      return opts.detailedExitcode && plan.changes.length + schedules.length > 0 ? ExitCodes.changes : ExitCodes.ok;
    }),
  );

  selectionOptions(
    connectionOptions(
      program
        .command('apply')
        .description(
          'Make the live state match the definition: organization, provider keys, teams, agents, humans, edges — created, updated, renamed, and deleted when the file no longer names them (deletes only with consent: type yes on a terminal, or --auto-approve); then its schedules on Temporal. Idempotent; safe to re-run after an interruption.',
        )
        .requiredOption('-f, --file <path>', 'definition file (YAML)')
        .option('--auto-approve', 'make the plan\'s deletes without asking (needed for deletes where there is no terminal: CI)')
        .addOption(new Option('--engine <engine>', 'where the orchestration runs').choices(Object.values(Engines)).default(Engines.local))
        .option('--task-queue <name>', 'Temporal task queue of the apply (engine temporal) and of scheduled runs', DEFAULT_TASK_QUEUE)
        .addOption(new Option('--parallelism <n>', 'most changes in flight at once').argParser(positiveInt).default(DEFAULT_PARALLELISM))
        .option('--json', 'print the result as JSON'),
    ),
  ).action((opts: PlanFlags & { engine: Engine; autoApprove?: boolean; json?: boolean }) =>
    run(async () => {
      // Before any change: the plan (a definition with schedules and no reachable Temporal applies nothing), then consent.
      const plan = await prepare(opts, io, { engine: opts.engine, retryReads: true });
      const approvedDeletes = await consent(plan, opts, io, 'Do you want to make these changes, deletes included?');
      printResult(plan, await runPlan(plan, { ...plan.input, approvedDeletes }, opts, io), opts.json, io);
      return ExitCodes.ok;
    }),
  );
}
