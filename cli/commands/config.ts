/**
 * `teamctl config get-contexts | current-context | use-context | set-context | delete-context`:
 * the named contexts of the config file (`cli/config.ts`), as `kubectl config` manages its own.
 */
import type { Command } from 'commander';
import { ToolkitError } from '../../errors/catalogue.ts';
import { configPath, contextNamed, ContextSchema, loadConfig, saveConfig } from '../config.ts';
import type { Context } from '../config.ts';
import { ExitCodes } from '../errors.ts';
import type { CliIo } from '../io.ts';
import type { Runner } from './runner.ts';

/** One context as a table row's cells. */
function cells(name: string, context: Context, current: boolean): string[] {
  return [current ? '*' : '', name, context.baseUrl ?? '', context.apiKeyEnv?.join(',') ?? '', context.temporalProfile ?? ''];
}

/** Rows as columns padded to their widest cell. */
function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n');
}

/**
 * Registers `config` and its subcommands. They read and write the config file of `io.env`
 * (`TEAMCTL_CONFIG`, else the XDG path) and never contact a service. Errors: `invalid_config`
 * (unreadable or invalid file, a bad value given to set-context), `context_not_found`
 * (with did-you-mean).
 */
export function registerConfig(program: Command, io: CliIo, run: Runner): void {
  const config = program
    .command('config')
    .description('Named contexts (service URL, key variable names, Temporal profile) in the config file: $TEAMCTL_CONFIG, else ~/.config/teamctl/config.yaml.');

  config
    .command('get-contexts')
    .description('List the contexts; * marks the current one.')
    .option('--json', 'print {"file", "current_context", "contexts"} as JSON')
    .action((opts: { json?: boolean }) =>
      run(async () => {
        const loaded = await loadConfig(configPath(io.env));
        const { contexts, currentContext } = loaded.config;
        if (opts.json) {
          io.stdout(JSON.stringify({ file: loaded.path, current_context: currentContext ?? null, contexts }, null, 2));
        } else if (Object.keys(contexts).length === 0) {
          io.stdout(`No contexts in ${loaded.path}${loaded.exists ? '' : ' (no such file yet)'}; add one with: teamctl config set-context NAME --base-url URL`);
        } else {
          const rows = Object.entries(contexts).map(([name, context]) => cells(name, context, name === currentContext));
          io.stdout(table([['CURRENT', 'NAME', 'BASE URL', 'KEY VARIABLES', 'TEMPORAL PROFILE'], ...rows]));
        }
        return ExitCodes.ok;
      }),
    );

  config
    .command('current-context')
    .description('Print the name of the current context.')
    .action(() =>
      run(async () => {
        const loaded = await loadConfig(configPath(io.env));
        const name = loaded.config.currentContext;
        if (!name) throw new ToolkitError('context_not_found', `no current context is set in ${loaded.path}; choose one with: teamctl config use-context NAME`);
        io.stdout(name);
        return ExitCodes.ok;
      }),
    );

  config
    .command('use-context')
    .description('Make a context the current one.')
    .argument('<name>', 'the context')
    .action((name: string) =>
      run(async () => {
        const loaded = await loadConfig(configPath(io.env));
        contextNamed(loaded, name);
        loaded.document.set('currentContext', name);
        await saveConfig(loaded);
        io.stdout(`Switched to context "${name}".`);
        return ExitCodes.ok;
      }),
    );

  config
    .command('set-context')
    .description('Create a context or change the fields given (the others stay). Keys are never stored: name the variables that hold them.')
    .argument('[name]', 'the context (or --current)')
    .option('--current', 'change the current context')
    .option('--base-url <url>', 'the service\'s base URL')
    .option('--api-key-env <name>', 'variable holding the organization key; repeat it for a keyring', (name: string, names: string[] | undefined) => [...(names ?? []), name])
    .option('--temporal-profile <profile>', 'profile of Temporal\'s config file (TEMPORAL_PROFILE)')
    .option('--use', 'also make it the current context')
    .action((nameArg: string | undefined, opts: { current?: boolean; baseUrl?: string; apiKeyEnv?: string[]; temporalProfile?: string; use?: boolean }) =>
      run(async () => {
        const loaded = await loadConfig(configPath(io.env));
        const name = opts.current ? loaded.config.currentContext : nameArg;
        if (!name) throw new ToolkitError('invalid_usage', opts.current ? `no current context is set in ${loaded.path}` : 'name the context: teamctl config set-context NAME (or --current)');
        const changes: Record<string, unknown> = {
          ...(opts.baseUrl !== undefined ? { baseUrl: opts.baseUrl } : {}),
          ...(opts.apiKeyEnv !== undefined ? { apiKeyEnv: opts.apiKeyEnv } : {}),
          ...(opts.temporalProfile !== undefined ? { temporalProfile: opts.temporalProfile } : {}),
        };
        // The same schema as the file: a bad value is refused before anything is written.
        const checked = ContextSchema.safeParse({ ...loaded.config.contexts[name], ...changes });
        if (!checked.success) {
          const problems = checked.error.issues.map((i) => `--${String(i.path[0]).replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}: ${i.message}`);
          throw new ToolkitError('invalid_config', `context "${name}" not saved: ${problems.join('; ')}`);
        }
        const existed = name in loaded.config.contexts;
        if (!existed) loaded.document.setIn(['contexts', name], loaded.document.createNode({}));
        for (const [field, value] of Object.entries(changes)) loaded.document.setIn(['contexts', name, field], value);
        if (opts.use) loaded.document.set('currentContext', name);
        await saveConfig(loaded);
        io.stdout(`Context "${name}" ${existed ? 'modified' : 'created'} in ${loaded.path}${opts.use ? '; it is the current context' : ''}.`);
        return ExitCodes.ok;
      }),
    );

  config
    .command('delete-context')
    .description('Delete a context (and unset it as the current one).')
    .argument('<name>', 'the context')
    .action((name: string) =>
      run(async () => {
        const loaded = await loadConfig(configPath(io.env));
        contextNamed(loaded, name);
        loaded.document.deleteIn(['contexts', name]);
        if (loaded.config.currentContext === name) loaded.document.delete('currentContext');
        await saveConfig(loaded);
        io.stdout(`Deleted context "${name}" from ${loaded.path}.`);
        return ExitCodes.ok;
      }),
    );
}
