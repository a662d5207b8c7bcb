/**
 * Named contexts: `teamctl config …` manages the config file, `--context` / `TEAMCTL_CONTEXT`
 * pick one, and flags and the environment win over it. Commands run in-process against a real
 * acs-server; each test has its own config file (`TEAMCTL_CONFIG`).
 */
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configPath } from '../../cli/config.ts';
import { AcsClient } from '../../client/acs-client.ts';
import { startServer } from '../../service/index.ts';
import { runTeamctl } from '../support/cli.ts';
import type { CliRun } from '../support/cli.ts';

let server: Awaited<ReturnType<typeof startServer>>;
let apiKey: string;

beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false });
  const org = await server.provisionOrganization('contexts');
  apiKey = org.api_key;
  const client = new AcsClient({ baseUrl: server.url, apiKey });
  await client.createTeam(org.org_id, { team_name: 'desk' });
});

afterAll(async () => {
  await server?.close();
});

/** A fresh config file path (not created). */
async function newConfig(): Promise<string> {
  return join(await mkdtemp(join(tmpdir(), 'teamctl-config-')), 'config.yaml');
}

const teamctl = (args: string[], env: NodeJS.ProcessEnv): Promise<CliRun> => runTeamctl(args, env);

describe('teamctl config: named contexts', () => {
  it('set-context, use-context, current-context and get-contexts manage the file as kubectl does', async () => {
    const env = { TEAMCTL_CONFIG: await newConfig() };
    expect(await teamctl(['config', 'set-context', 'local', '--base-url', server.url], env)).toMatchObject({ code: 0 });
    expect(await teamctl(['config', 'set-context', 'prod', '--base-url', 'https://acs.example.com', '--api-key-env', 'PROD_KEY', '--api-key-env', 'PROD_KEY_NEXT', '--temporal-profile', 'prod'], env)).toMatchObject({ code: 0 });
    expect((await teamctl(['config', 'current-context'], env)).code).toBe(1);
    expect(await teamctl(['config', 'use-context', 'local'], env)).toMatchObject({ code: 0, stdout: 'Switched to context "local".\n' });
    expect(await teamctl(['config', 'current-context'], env)).toMatchObject({ code: 0, stdout: 'local\n' });
    const listed = await teamctl(['config', 'get-contexts'], env);
    expect(listed.stdout.split('\n')[0]).toMatch(/^CURRENT\s+NAME\s+BASE URL\s+KEY VARIABLES\s+TEMPORAL PROFILE$/);
    expect(listed.stdout).toMatch(/\*\s+local\s+http:\/\/127\.0\.0\.1:\d+/);
    expect(listed.stdout).toMatch(/\n\s+prod\s+https:\/\/acs\.example\.com\s+PROD_KEY,PROD_KEY_NEXT\s+prod/);
    const json = JSON.parse((await teamctl(['config', 'get-contexts', '--json'], env)).stdout);
    expect(json).toEqual({
      file: env.TEAMCTL_CONFIG,
      current_context: 'local',
      contexts: { local: { baseUrl: server.url }, prod: { baseUrl: 'https://acs.example.com', apiKeyEnv: ['PROD_KEY', 'PROD_KEY_NEXT'], temporalProfile: 'prod' } },
    });
    expect(await teamctl(['config', 'delete-context', 'local'], env)).toMatchObject({ code: 0 });
    expect((await teamctl(['config', 'current-context'], env)).code).toBe(1);
  });

  it('set-context changes only the fields given and keeps the comments of the file', async () => {
    const file = await newConfig();
    await writeFile(file, '# my contexts\ncontexts:\n  dev:\n    baseUrl: http://127.0.0.1:1 # old\n    apiKeyEnv: [DEV_KEY]\n');
    expect(await teamctl(['config', 'set-context', 'dev', '--base-url', 'http://127.0.0.1:2'], { TEAMCTL_CONFIG: file })).toMatchObject({ code: 0 });
    const text = await readFile(file, 'utf8');
    expect(text).toContain('# my contexts');
    expect(text).toContain('baseUrl: http://127.0.0.1:2');
    expect(text).toContain('DEV_KEY');
  });

  it('a context supplies the base URL and the key variable of a command that connects', async () => {
    const env = { TEAMCTL_CONFIG: await newConfig(), MY_KEY: apiKey };
    await teamctl(['config', 'set-context', 'here', '--base-url', server.url, '--api-key-env', 'MY_KEY', '--use'], env);
    const result = await teamctl(['thread', 'list', '--team', 'desk'], env);
    expect(result).toMatchObject({ code: 0, stdout: 'No threads in team desk.\n' });
  });

  it('--context and TEAMCTL_CONTEXT pick a context other than the current one', async () => {
    const env = { TEAMCTL_CONFIG: await newConfig(), ACS_API_KEY: apiKey };
    await teamctl(['config', 'set-context', 'nowhere', '--base-url', 'http://127.0.0.1:1', '--use'], env);
    await teamctl(['config', 'set-context', 'here', '--base-url', server.url], env);
    expect((await teamctl(['thread', 'list', '--team', 'desk'], env)).stderr).toContain('cannot reach ACS at http://127.0.0.1:1');
    expect(await teamctl(['--context', 'here', 'thread', 'list', '--team', 'desk'], env)).toMatchObject({ code: 0 });
    expect(await teamctl(['thread', 'list', '--team', 'desk'], { ...env, TEAMCTL_CONTEXT: 'here' })).toMatchObject({ code: 0 });
  });

  it('flags and environment variables win over the context', async () => {
    const env = { TEAMCTL_CONFIG: await newConfig(), ACS_API_KEY: apiKey };
    await teamctl(['config', 'set-context', 'nowhere', '--base-url', 'http://127.0.0.1:1', '--api-key-env', 'UNSET_KEY', '--use'], env);
    expect(await teamctl(['thread', 'list', '--team', 'desk', '--base-url', server.url, '--api-key-env', 'ACS_API_KEY'], env)).toMatchObject({ code: 0 });
    expect(await teamctl(['thread', 'list', '--team', 'desk'], { ...env, ACS_BASE_URL: server.url, TEAMCTL_API_KEY_ENV: 'ACS_API_KEY' })).toMatchObject({ code: 0 });
  });

  it('an unknown context is refused with a did-you-mean', async () => {
    const env = { TEAMCTL_CONFIG: await newConfig() };
    await teamctl(['config', 'set-context', 'production', '--base-url', 'https://acs.example.com'], env);
    const result = await teamctl(['--context', 'prodution', 'thread', 'list', '--team', 'desk'], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`error[context_not_found]: no context named "prodution" in ${env.TEAMCTL_CONFIG} (did you mean "production"?)`);
  });

  it('a bad config file is a clear error naming the file, with the place of every problem', async () => {
    const file = await newConfig();
    await writeFile(file, 'currentContext: dev\ncontexts:\n  dev:\n    baseUrl: ftp://x\n    apiKey: acs_org_secret\n');
    const result = await teamctl(['thread', 'list', '--team', 'desk'], { TEAMCTL_CONFIG: file });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`error[invalid_config]: ${file}: not a valid config file:`);
    expect(result.stderr).toContain(`${file}:4:14: contexts.dev.baseUrl: must be an http(s) URL`);
    expect(result.stderr).toContain(`${file}:5:5: contexts.dev.apiKey: apiKey: keys are never stored in the config file; name the variable that holds the key with apiKeyEnv`);
    expect(result.stderr).not.toContain('acs_org_secret');
    // validate never reads the config file.
    const example = new URL('../../examples/acme-research.yaml', import.meta.url).pathname;
    expect((await teamctl(['validate', '-f', example], { TEAMCTL_CONFIG: file })).code).toBe(0);
  });

  it('set-context refuses a key where a variable name belongs, and writes nothing', async () => {
    const env = { TEAMCTL_CONFIG: await newConfig() };
    // A made-up key, put together here so that no key-shaped string stands in the repository.
    const key = `acs_org_${'0123456789abcdef'.repeat(2)}`;
    const result = await teamctl(['config', 'set-context', 'dev', '--api-key-env', key], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('--api-key-env: must name environment variables');
    await expect(readFile(env.TEAMCTL_CONFIG, 'utf8')).rejects.toThrow();
  });

  it('the config file is TEAMCTL_CONFIG, else under XDG_CONFIG_HOME, else under ~/.config', () => {
    expect(configPath({ TEAMCTL_CONFIG: '/etc/t.yaml', XDG_CONFIG_HOME: '/x' })).toBe('/etc/t.yaml');
    expect(configPath({ XDG_CONFIG_HOME: '/x', HOME: '/home/u' })).toBe('/x/teamctl/config.yaml');
    expect(configPath({ HOME: '/home/u' })).toBe('/home/u/.config/teamctl/config.yaml');
  });
});
