/** `teamctl destroy`: deletes the organization a definition names, or with `--target`/`--exclude` part of it. */
import type { Command } from 'commander';
import { Option } from 'commander';
import { DEFAULT_TASK_QUEUE } from '../../temporal/settings.ts';
import { ExitCodes } from '../errors.ts';
import type { CliIo } from '../io.ts';
import { consent, Engines, prepare, printResult, runPlan, selectionOptions } from '../lifecycle.ts';
import type { Engine, PlanFlags } from '../lifecycle.ts';
import { plain, renderPlan } from '../render.ts';
import { connectionOptions } from './plan-apply.ts';
import type { Runner } from './runner.ts';

/**
 * Registers `teamctl destroy -f FILE [--auto-approve] [--target A]… [--exclude A]… [--engine
 * local|temporal] [--task-queue Q] [--json]`: shows what will go, with the service's counts (the
 * organization's deletion preview: teams, agents, humans, edges, threads, messages,
 * attachments), asks as `apply` does for deletes (no terminal and no `--auto-approve`:
 * `not_approved`, nothing deleted), then deletes the organization (`DELETE /organizations/{id}`,
 * contract §5; it cascades to everything it holds) and the organization's schedules on Temporal,
 * through the same orchestration as `apply`, on either engine. With `--target`/`--exclude` it
 * deletes only the selected resources (and what must go first: a participant's edges). A second
 * destroy finds nothing and says so. Errors: `not_approved`, `deletion_protected` (the service
 * refuses to delete a protected resource), `forbidden` (the key's own organization), and those
 * of `apply`.
 */
export function registerDestroy(program: Command, io: CliIo, run: Runner): void {
  selectionOptions(
    connectionOptions(
      program
        .command('destroy')
        .description(
          'Delete the organization the definition names, with everything in it (or, with --target/--exclude, only those resources), and its schedules on Temporal. Shows what will go with counts and asks first (type yes), or --auto-approve.',
        )
        .requiredOption('-f, --file <path>', 'definition file (YAML) naming the organization')
        .option('--auto-approve', 'delete without asking (needed where there is no terminal: CI)')
        .addOption(new Option('--engine <engine>', 'where the orchestration runs').choices(Object.values(Engines)).default(Engines.local))
        .option('--task-queue <name>', 'Temporal task queue of the destroy (engine temporal)', DEFAULT_TASK_QUEUE)
        .option('--json', 'print the result as JSON'),
    ),
  ).action((opts: PlanFlags & { engine: Engine; autoApprove?: boolean; json?: boolean }) =>
    run(async () => {
      const plan = await prepare(opts, io, { destroy: true, engine: opts.engine, retryReads: true });
      const name = plan.definition.organization.name;
      if (plan.changes.length + (plan.schedules?.changes.length ?? 0) === 0) {
        if (opts.json) io.stdout(JSON.stringify({ orgId: '', applied: [] }, null, 2));
        else io.stdout(`Nothing to destroy: organization ${name} holds nothing the selection names (or does not exist).`);
        return ExitCodes.ok;
      }
      // Shown before anything else when nobody is asked; `consent` shows it when it asks.
      if (!opts.json && (opts.autoApprove || !io.ask)) io.stdout(renderPlan(plan.changes, plan.schedules?.changes ?? [], io.style ?? plain));
      const question = plan.input.targets || plan.input.excludes ? 'Do you really want to delete these resources?' : `Do you really want to destroy organization ${name} and everything in it?`;
      const approvedDeletes = await consent(plan, opts, io, question);
      printResult(plan, await runPlan(plan, { ...plan.input, approvedDeletes }, opts, io), opts.json, io);
      return ExitCodes.ok;
    }),
  );
}
