/**
 * `teamctl validate`: checks a definition file without contacting the service. A module of its
 * own, so that it loads the definition's parser and schema and nothing that connects.
 */
import type { Command } from 'commander';
import { agentsWithoutKey, withoutKeyWarning } from '../../definitions/provider-keys.ts';
import { loadDesired } from '../definition-file.ts';
import { ExitCodes } from '../exit-codes.ts';
import type { CliIo } from '../io.ts';
import { counted } from '../render.ts';
import type { Runner } from './runner.ts';

/**
 * Registers `validate -f FILE`: prints `FILE: valid.` with the organization, its teams (agents,
 * humans, edges), pipelines and schedules, exit 0, with a warning on stderr for each agent whose provider has no key; or the problems as `FILE:LINE:COL: message`
 * lines, exit 1 (`invalid_definition`). Secrets need not be set.
 */
export function registerValidate(program: Command, io: CliIo, run: Runner): void {
  program
    .command('validate')
    .description('Check a definition file without contacting the service; problems are printed as FILE:LINE:COL: message.')
    .requiredOption('-f, --file <path>', 'definition file (YAML)')
    .action((opts: { file: string }) =>
      run(async () => {
        const desired = await loadDesired(opts.file, io.env, false);
        const counts = desired.teams.map((t) => `${t.name} (${counted(t.agents.length, 'agent')}, ${counted(t.humans.length, 'human')}, ${counted(t.edges.length, 'edge')})`);
        const more = [
          desired.pipelines.length ? `; pipelines: ${desired.pipelines.map((p) => p.name).join(', ')}` : '',
          desired.schedules.length ? `; schedules: ${desired.schedules.map((s) => s.name).join(', ')}` : '',
        ].join('');
        io.stdout(`${opts.file}: valid. Organization ${desired.organization.name}; teams: ${counts.join(', ') || 'none'}${more}.`);
        for (const entry of agentsWithoutKey(desired)) io.stderr(withoutKeyWarning(entry));
        return ExitCodes.ok;
      }),
    );
}
