/**
 * Shell completion: `teamctl completion SHELL` prints a script, and bash, given that script,
 * completes commands, flags, flag choices and context names through the real program.
 */
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { runTeamctl } from '../support/cli.ts';
import type { CliRun } from '../support/cli.ts';

const run = promisify(execFile);
const root = resolve(import.meta.dirname, '../..');
let shimDir: string;
let config: string;

const teamctl = (args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliRun> => runTeamctl(args, env);

beforeAll(async () => {
  // `teamctl` on PATH, as an installed one would be, running this checkout with the project's Node.
  shimDir = await mkdtemp(join(tmpdir(), 'teamctl-completion-'));
  const shim = join(shimDir, 'teamctl');
  await writeFile(shim, `#!/bin/sh\nexec "${process.execPath}" "${join(root, 'bin/teamctl.ts')}" "$@"\n`);
  await chmod(shim, 0o755);
  config = join(shimDir, 'config.yaml');
  await writeFile(config, 'contexts:\n  staging: { baseUrl: "http://127.0.0.1:1" }\n  prod: { baseUrl: "https://acs.example.com" }\n');
});

/**
 * What bash completes for `line` (the cursor at its end): sources `teamctl completion bash`,
 * sets COMP_* as readline would and calls the completion function.
 */
async function bashCompletes(line: string): Promise<string[]> {
  const script = [
    'eval "$(teamctl completion bash)"',
    'COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}',
    'read -ra COMP_WORDS <<< "$COMP_LINE"',
    '[[ "$COMP_LINE" == *" " ]] && COMP_WORDS+=("")',
    'COMP_CWORD=$((${#COMP_WORDS[@]} - 1))',
    '_teamctl_completion',
    'printf "%s\\n" "${COMPREPLY[@]}"',
  ].join('\n');
  const { stdout } = await run('bash', ['-c', script, 'bash', line], { env: { ...process.env, PATH: `${shimDir}:${process.env.PATH}`, TEAMCTL_CONFIG: config } });
  return stdout.split('\n').filter(Boolean);
}

describe('teamctl completion', () => {
  it('prints a completion script for bash, zsh, fish and PowerShell that calls teamctl back', async () => {
    for (const [shell, marker] of [['bash', 'complete -o default -F _teamctl_completion teamctl'], ['zsh', 'compdef _teamctl_completion teamctl'], ['fish', 'complete -f -d \'teamctl\' -c teamctl'], ['pwsh', 'Register-ArgumentCompleter']] as const) {
      const result = await teamctl(['completion', shell]);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain(marker);
      expect(result.stdout).toMatch(/(teamctl|\$Program) completion-server/);
    }
  });

  it('refuses a shell it has no script for', async () => {
    const result = await teamctl(['completion', 'tcsh']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("'tcsh' is invalid for argument 'shell'. Allowed choices are bash, zsh, fish, pwsh");
  });

  it('bash: completes commands, subcommands, flags, flag choices and context names', async () => {
    const commands = await bashCompletes('teamctl ');
    expect(commands).toEqual(expect.arrayContaining(['validate', 'plan', 'apply', 'thread', 'tasks', 'config', 'completion']));
    expect(commands).not.toContain('completion-server');
    expect(await bashCompletes('teamctl thread ')).toEqual(['open', 'send', 'show', 'list', 'follow', 'stop']);
    expect(await bashCompletes('teamctl tasks ')).toEqual(['list', 'show', 'cancel']);
    expect(await bashCompletes('teamctl tasks list --state ')).toEqual(['submitted', 'working', 'input-required', 'completed', 'failed', 'canceled', 'rejected']);
    expect(await bashCompletes('teamctl apply --eng')).toEqual(['--engine']);
    expect(await bashCompletes('teamctl apply --engine ')).toEqual(['local', 'temporal']);
    expect(await bashCompletes('teamctl --context ')).toEqual(['staging', 'prod']);
    expect(await bashCompletes('teamctl config use-context st')).toEqual(['staging']);
  }, 60_000);

  it('bash: a flag taking a path leaves the completion to the shell\'s file names', async () => {
    expect(await bashCompletes('teamctl validate -f ')).toEqual([]);
  }, 30_000);
});
