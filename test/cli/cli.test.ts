import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApplyInput } from '../../cli/desired.ts';
import { runCli } from '../../cli/program.ts';
import type { CliIo } from '../../cli/io.ts';
import { startServer } from '../../service/index.ts';

const example = new URL('../../examples/acme-research.yaml', import.meta.url).pathname;
const ECHO_KEY = 'cli-echo-provider-secret-41d2';
let server: Awaited<ReturnType<typeof startServer>>;
let apiKey: string;

/** Runs teamctl in-process with captured output. */
async function teamctl(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    stdout: (t) => void (stdout += t.endsWith('\n') ? t : `${t}\n`),
    stderr: (t) => void (stderr += t.endsWith('\n') ? t : `${t}\n`),
    env: { ACS_BASE_URL: server.url, ACS_API_KEY: apiKey, ECHO_PROVIDER_KEY: ECHO_KEY, ...env },
    isTTY: false,
  };
  const code = await runCli(args, io);
  return { code, stdout, stderr };
}

/** A definition file with the example's content under another organization name. */
async function exampleAs(orgName: string): Promise<string> {
  const { readFile } = await import('node:fs/promises');
  const dir = await mkdtemp(join(tmpdir(), 'teamctl-cli-'));
  const file = join(dir, 'team.yaml');
  await writeFile(file, (await readFile(example, 'utf8')).replace('name: acme-research', `name: ${orgName}`));
  return file;
}

beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 25, logger: false });
  apiKey = (await server.provisionOrganization('cli-tests')).api_key;
});

afterAll(async () => {
  await server?.close();
});

describe('teamctl', () => {
  it('validate: the example is valid and no request is needed', async () => {
    const result = await teamctl(['validate', '-f', example], { ACS_BASE_URL: 'http://127.0.0.1:1' });
    expect(result).toMatchObject({ code: 0 });
    // Counts read as English: one human, two agents.
    expect(result.stdout).toBe(`${example}: valid. Organization acme-research; teams: literature-review (2 agents, 1 human, 2 edges).\n`);
  });

  it('get orgs: the HUMANS column says that the service\'s count includes the organization\'s creator', async () => {
    const file = await exampleAs('counted-humans');
    expect((await teamctl(['apply', '-f', file])).code).toBe(0);
    const table = await teamctl(['get', 'orgs', '--org', 'counted-humans']);
    const [header, row] = table.stdout.trim().split('\n').map((line) => line.split(/\s{3,}/));
    expect(header!.slice(0, 3)).toEqual(['NAME', 'TEAMS', 'HUMANS']);
    // alice, in the one team, and the creator the service counts with her.
    expect(row!.slice(0, 3)).toEqual(['counted-humans', '1', '1 + creator']);
    // Under the table (on stderr: stdout keeps the table alone), what "+ creator" means.
    expect(table.stderr).toBe(
      "HUMANS: the humans of the organization's teams, + creator: the person who created the organization, whom the service counts among its humans too (human_count in -o json is one more).\n",
    );
    const json = JSON.parse((await teamctl(['get', 'orgs', '--org', 'counted-humans', '-o', 'json'])).stdout) as Array<{ human_count: number }>;
    expect(json[0]!.human_count).toBe(2);
  });

  it('validate: a bad file exits 1 with FILE:LINE:COL problems', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'teamctl-cli-'));
    const file = join(dir, 'bad.yaml');
    await writeFile(file, 'apiVersion: teamctl/v1\norganization:\n  nmae: acme\n');
    const result = await teamctl(['validate', '-f', file]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`${file}:3:3: organization.nmae: unknown key "nmae" (did you mean "name"?)`);
  });

  it('plan: --detailed-exitcode is 2 before apply and 0 after, and --json lists the changes', async () => {
    const file = await exampleAs('cli-plan');
    const before = await teamctl(['plan', '-f', file, '--json', '--detailed-exitcode']);
    expect(before.code).toBe(2);
    const plan = JSON.parse(before.stdout) as { changes: Array<{ action: string; kind: string; name: string }> };
    expect(plan.changes.map((c) => `${c.action} ${c.kind} ${c.name}`)).toContain('create agent scout');
    expect(before.stdout).not.toContain(ECHO_KEY);

    const applied = await teamctl(['apply', '-f', file]);
    expect(applied.code).toBe(0);
    expect(applied.stdout).toContain('Apply complete: 8 created');

    const after = await teamctl(['plan', '-f', file, '--json', '--detailed-exitcode']);
    expect({ code: after.code, plan: JSON.parse(after.stdout) }).toEqual({ code: 0, plan: { changes: [] } });
    const again = await teamctl(['apply', '-f', file]);
    expect(again.stdout).toContain('No changes.');
  });

  it('plan: a missing API key is an error with a hint, exit 1', async () => {
    const result = await teamctl(['plan', '-f', example], { ACS_API_KEY: '' });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/error\[unresolved_secret\]: environment variable ACS_API_KEY/);
    expect(result.stderr).toContain('hint:');
  });

  it('thread open: prints the echo agent\'s reply and exits 0', async () => {
    const file = await exampleAs('cli-thread');
    expect((await teamctl(['apply', '-f', file])).code).toBe(0);
    const result = await teamctl(['thread', 'open', '--org', 'cli-thread', '--team', 'literature-review', '--from', 'alice', '--to', 'scout', '--subject', 'Hi', '--content', 'find papers', '--wait', '30']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('scout: echo: find papers');
  });

  it('thread open: no reply in time (an external agent) says so and exits 4', async () => {
    const file = await exampleAs('cli-silent');
    expect((await teamctl(['apply', '-f', file])).code).toBe(0);
    const result = await teamctl(['thread', 'open', '--org', 'cli-silent', '--team', 'literature-review', '--from', 'scout', '--to', 'archivist', '--content', 'anyone?', '--wait', '1']);
    expect(result.code).toBe(4);
    expect(result.stderr).toContain('error[timed_out]: no reply from archivist within 1 s');
  });

  it('apply --engine temporal: an unreachable Temporal is temporal_unreachable naming the address with a hint, and nothing is sent to the service', async () => {
    const file = await exampleAs('cli-temporal');
    const result = await teamctl(['apply', '-f', file, '--engine', 'temporal'], { TEMPORAL_ADDRESS: '127.0.0.1:1' });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('error[temporal_unreachable]: cannot reach Temporal at 127.0.0.1:1');
    expect(result.stderr).toContain('hint: start one with `npm run temporal:dev`');
    const plan = await teamctl(['plan', '-f', file, '--detailed-exitcode']);
    expect(plan.code).toBe(2);
  });

  it('apply: the workflow input holds secret references and the key variable\'s name, never a secret value', async () => {
    const env = { ACS_BASE_URL: server.url, ACS_API_KEY: apiKey, ECHO_PROVIDER_KEY: ECHO_KEY };
    const input = await buildApplyInput(example, { apiKeyEnv: 'ACS_API_KEY' }, env);
    const recorded = JSON.stringify(input);
    expect(recorded).not.toContain(apiKey);
    expect(recorded).not.toContain(ECHO_KEY);
    expect(input.connection).toEqual({ baseUrl: server.url, apiKeyEnv: 'ACS_API_KEY' });
    expect(input.desired.organization.providerKeys).toEqual([{ provider: 'echo', secretRef: '${env:ECHO_PROVIDER_KEY}' }]);
  });

  it('worker: with no reachable Temporal it prints one error line and a hint, no transport trace, and exits 1', async () => {
    const result = await teamctl(['worker', '--task-queue', 'nowhere'], { TEMPORAL_ADDRESS: '127.0.0.1:1' });
    expect(result.code).toBe(1);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^error\[temporal_unreachable\]: cannot reach Temporal at 127\.0\.0\.1:1 \(namespace default\)/);
    expect(lines[1]).toMatch(/^hint: /);
  });

  it('worker --max-cached-workflows: 0 or at least 2, checked before Temporal is reached; more workflow tasks than cached workflows is refused with the fix', async () => {
    const unreachable = { TEMPORAL_ADDRESS: '127.0.0.1:1' };
    for (const value of ['1', '-3', '2.5', 'lots']) {
      const refused = await teamctl(['worker', '--max-cached-workflows', value], unreachable);
      expect(refused.code, value).toBe(1);
      expect(refused.stderr).toBe(
        `error: option '--max-cached-workflows <n>' argument '${value}' is invalid. expected 0 (keep no workflow in memory) or a whole number of at least 2 (the least cache the Temporal SDK keeps)\n` +
          'usage: teamctl worker [options]\n(teamctl worker --help lists every flag)\n',
      );
    }
    const tooManyTasks = await teamctl(['worker', '--max-cached-workflows', '10', '--max-concurrent-workflow-tasks', '20'], unreachable);
    expect(tooManyTasks.code).toBe(1);
    expect(tooManyTasks.stderr).toBe(
      'error[invalid_usage]: --max-concurrent-workflow-tasks 20 is more than --max-cached-workflows 10: a worker that caches workflows runs at most as many workflow tasks at once as it caches\n' +
        'hint: lower --max-concurrent-workflow-tasks to 10 or less, or raise --max-cached-workflows\n',
    );
    // Accepted values reach the connection (here: none).
    for (const value of ['0', '2', '500']) {
      const accepted = await teamctl(['worker', '--max-cached-workflows', value], unreachable);
      expect(accepted.stderr, value).toMatch(/^error\[temporal_unreachable\]/);
    }
    const stateAlone = await teamctl(['worker', '--events-state', join(tmpdir(), 'events.json')], unreachable);
    expect(stateAlone.stderr).toMatch(/^error\[invalid_usage\]: --events-state is the state of the events listener: give --events-listen HOST:PORT too\n/);
  });

  it('usage mistakes: commander\'s message, then the command\'s usage and where its flags are listed; exit 1', async () => {
    const missing = await teamctl(['plan']);
    expect(missing).toMatchObject({ code: 1, stdout: '' });
    expect(missing.stderr).toBe("error: required option '-f, --file <path>' not specified\nusage: teamctl plan -f <path> [options]\n(teamctl plan --help lists every flag)\n");
    const argument = await teamctl(['thread', 'follow']);
    expect(argument.stderr).toBe("error: missing required argument 'thread'\nusage: teamctl thread follow [options] <thread>\n(teamctl thread follow --help lists every flag)\n");
    const command = await teamctl(['aply']);
    expect(command.stderr).toBe("error: unknown command 'aply'\n(Did you mean apply?)\nusage: teamctl [options] [command]\n(teamctl --help lists every command)\n");
  });

  it('usage mistakes: a misspelt required flag is reported as the unknown flag it is, with its did-you-mean, not as the required one missing', async () => {
    const result = await teamctl(['plan', '--fiel', 'x']);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe("error: unknown option '--fiel'\n(Did you mean --file?)\nusage: teamctl plan -f <path> [options]\n(teamctl plan --help lists every flag)\n");
    const open = await teamctl(['thread', 'open', '--team', 'desk', '--form', 'dana', '--to', 'bob', '--content', 'hi']);
    expect(open.stderr.split('\n').slice(0, 2)).toEqual(["error: unknown option '--form'", '(Did you mean --from?)']);
  });

  it('teamctl: the binary runs on Node 24 and prints its help', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [new URL('../../bin/teamctl.ts', import.meta.url).pathname, '--help']);
    expect(stdout).toContain('Usage: teamctl');
    expect(stdout).toMatch(/plan/);
  });
});
