/**
 * `teamctl validate`: checks a definition file without contacting the service (but, with
 * `--remote`, remote A2A agents' cards). A module of its own, so that it loads the definition's
 * parser and schema and nothing that connects (`--remote` loads the card reader when given).
 */
import type { Command } from 'commander';
import { agentsWithoutKey, withoutKeyWarning } from '../../definitions/provider-keys.ts';
import type { Definition } from '../../definitions/schema.ts';
import { ToolkitError } from '../../errors/catalogue.ts';
import { loadDesired } from '../definition-file.ts';
import { ExitCodes } from '../exit-codes.ts';
import type { CliIo } from '../io.ts';
import { counted } from '../render.ts';
import type { Runner } from './runner.ts';

/**
 * `validate --remote`: reads every remote A2A agent's card; prints each one read on stdout
 * (`cardLine`) and each that cannot be read or does not parse as `FILE:LINE:COL: ADDRESS: problem`
 * on stderr. Errors: `invalid_agent_card` naming the agents and their cards' URLs, when any;
 * `unresolved_secret` (a header's variable is not set).
 */
async function checkRemoteCards(file: string, definition: Definition, io: CliIo): Promise<void> {
  // Loaded only with --remote: validate alone loads nothing that connects.
  const { cardLine, entryPlace, readRemoteCards } = await import('../remote-cards.ts');
  const cards = await readRemoteCards(definition, io);
  for (const entry of cards) {
    const line = cardLine(entry);
    if (line) io.stdout(`${file}: remote A2A agent ${line.trimStart()}`);
  }
  const bad = cards.filter((entry) => !entry.verdict.ok);
  for (const entry of bad) if (!entry.verdict.ok) io.stderr(`${await entryPlace(file, entry)}: ${entry.address}: ${entry.verdict.problem}`);
  if (bad.length > 0) {
    const list = bad.map((entry) => `${entry.address} (${entry.verdict.cardUrl})`).join(', ');
    throw new ToolkitError('invalid_agent_card', `the Agent Card of ${counted(bad.length, 'remote agent')} cannot be read or does not parse: ${list}`);
  }
}

/**
 * Registers `validate -f FILE [--remote]`: prints `FILE: valid.` with the organization, its teams (agents,
 * humans, edges), pipelines and schedules, exit 0, with a warning on stderr for each agent whose provider has no key; or the problems as `FILE:LINE:COL: message`
 * lines, exit 1 (`invalid_definition`). Secrets need not be set. With `--remote` (the one
 * thing it contacts), each remote A2A agent's card is read too ({@link checkRemoteCards}).
 */
export function registerValidate(program: Command, io: CliIo, run: Runner): void {
  program
    .command('validate')
    .description('Check a definition file without contacting the service; problems are printed as FILE:LINE:COL: message. With --remote, also read each remote A2A agent\'s Agent Card.')
    .requiredOption('-f, --file <path>', 'definition file (YAML)')
    .option('--remote', 'also read each remote A2A agent\'s Agent Card (a2a.url, with its headers: their variables must be set) and fail when one cannot be read or does not parse')
    .action((opts: { file: string; remote?: boolean }) =>
      run(async () => {
        const desired = await loadDesired(opts.file, io.env, false);
        if (opts.remote) await checkRemoteCards(opts.file, desired, io);
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
