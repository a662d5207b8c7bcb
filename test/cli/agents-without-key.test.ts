/**
 * An agent that can never answer — a provider, and no key for it in its organization — is told
 * of at every step a person takes: `validate`, `plan` and `apply` warn (which agents, which key,
 * how to set it), `get agents` shows it waiting for the key, and a `thread open --wait` to it
 * that times out says why. Against a real acs-server.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer } from '../../service/index.ts';
import { runTeamctl } from '../support/cli.ts';

let server: Awaited<ReturnType<typeof startServer>>;
let env: NodeJS.ProcessEnv;
let dir: string;

beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false });
  env = { ACS_BASE_URL: server.url, ACS_API_KEY: (await server.provisionOrganization('keyless-admin')).api_key, ECHO_PROVIDER_KEY: 'echo', TEAMCTL_CONFIG: '/nonexistent/teamctl.yaml' };
  dir = await mkdtemp(join(tmpdir(), 'teamctl-keyless-'));
});

afterAll(async () => {
  await server?.close();
});

/** A definition whose `helper` and `critic` use openai, with no openai key; `scout` has its echo key. */
async function keyless(org: string, providerKeys = '    echo: ${env:ECHO_PROVIDER_KEY}\n'): Promise<string> {
  const file = join(dir, `${org}.yaml`);
  await writeFile(
    file,
    `apiVersion: teamctl/v1
organization:
  name: ${org}
  providerKeys:
${providerKeys}teams:
  - name: intake
    agents:
      - name: scout
        provider: echo
      - name: helper
        provider: openai
        model: gpt-4o-mini
      - name: critic
        provider: openai
        model: gpt-4o-mini
    humans:
      - name: dana
    edges:
      - [dana, helper]
`,
  );
  return file;
}

const WARNING =
  'warning: no openai key in organization.providerKeys: agents intake/helper, intake/critic will not answer (their messages wait for a key); add "openai: ${env:OPENAI_API_KEY}" under organization.providerKeys, export OPENAI_API_KEY, and apply';

describe('agents with no key for their provider', () => {
  it('validate, plan and apply each warn on stderr, naming the agents, the key and how to set it, and still do their work', async () => {
    const file = await keyless('keyless');
    for (const command of ['validate', 'plan', 'apply']) {
      const result = await runTeamctl([command, '-f', file], env);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr.trim().split('\n')).toContain(WARNING);
      expect(result.stdout).not.toContain('warning');
    }
  });

  it('get agents shows each such agent waiting for its key, in the table and as waiting_for_key in JSON', async () => {
    await runTeamctl(['apply', '-f', await keyless('keyless-get')], env);
    const table = await runTeamctl(['get', 'agents', '--org', 'keyless-get'], env);
    const rows = table.stdout.trim().split('\n').map((line) => line.split(/\s{3,}/));
    expect(rows.map((r) => [r[1], r[4]])).toEqual([
      ['NAME', 'STATUS'],
      ['scout', 'active'],
      ['helper', 'active, waiting for an openai key'],
      ['critic', 'active, waiting for an openai key'],
    ]);
    const json = JSON.parse((await runTeamctl(['get', 'agents', '--org', 'keyless-get', '-o', 'json'], env)).stdout) as Array<{ name: string; waiting_for_key: string | null }>;
    expect(json.map((a) => [a.name, a.waiting_for_key])).toEqual([
      ['scout', null],
      ['helper', 'openai'],
      ['critic', 'openai'],
    ]);
  });

  it('thread open --wait to such an agent times out saying why it could not answer, instead of "check that the peer is running"', async () => {
    await runTeamctl(['apply', '-f', await keyless('keyless-wait')], env);
    const result = await runTeamctl(['thread', 'open', '--org', 'keyless-wait', '--team', 'intake', '--from', 'dana', '--to', 'helper', '--content', 'hello?', '--wait', '1'], env);
    expect(result.code).toBe(4);
    expect(result.stderr).toBe(
      'error[timed_out]: no reply from helper within 1 s\nhint: helper cannot answer: its organization has no openai key; add it under organization.providerKeys in the definition and apply (its messages wait until then)\n',
    );
  });

  it('with the key in the definition there is no warning, and get agents shows no wait', async () => {
    const file = await keyless('keyed', '    echo: ${env:ECHO_PROVIDER_KEY}\n    openai: ${env:OPENAI_KEY_OF_TEST}\n');
    const withKey = { ...env, OPENAI_KEY_OF_TEST: 'sk-test-not-a-real-key' };
    const applied = await runTeamctl(['apply', '-f', file], withKey);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stderr).not.toContain('warning');
    expect((await runTeamctl(['get', 'agents', '--org', 'keyed'], withKey)).stdout).not.toContain('waiting');
  });
});
