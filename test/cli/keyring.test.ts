/**
 * The organization keyring of the CLI (`--api-key-env`, repeatable) against a real acs-server:
 * after a rotation with grace 0, commands fail over from the refused key to the next one, once;
 * the default keyring; and the usage and secret errors, which name variables and never a value.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { AcsClient } from '../../client/acs-client.ts';
import { resolveConnection } from '../../cli/context.ts';
import type { CliIo } from '../../cli/io.ts';
import { runCli } from '../../cli/program.ts';
import { startServer } from '../../service/index.ts';
import { recordHeader } from '../support/dispatcher.ts';

let server: Awaited<ReturnType<typeof startServer>>;
let orgId: string;
let oldKey: string;
let newKey: string;
let threadId: string;
let definition: string;
/** The `X-API-Key` of every request sent to the server since the last `teamctl` call began. */
let keysSent: string[] = [];
let recorder: ReturnType<typeof recordHeader> | undefined;

/** Runs teamctl in-process with exactly `env` (plus the service URL) and captured output. */
async function teamctl(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = { stdout: (t) => void (stdout += `${t}\n`), stderr: (t) => void (stderr += `${t}\n`), env: { ACS_BASE_URL: server.url, ...env }, isTTY: false };
  keysSent.length = 0;
  const code = await runCli(args, io);
  return { code, stdout, stderr };
}

beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false });
  const org = await server.provisionOrganization('keyring-org');
  orgId = org.org_id;
  oldKey = org.api_key;
  const client = new AcsClient({ baseUrl: server.url, apiKey: oldKey });
  const team = await client.createTeam(orgId, { team_name: 'desk' });
  const dana = (await client.createHuman(team.team_id, { name: 'dana' })).human_id;
  const triager = (await client.createHuman(team.team_id, { name: 'triager' })).human_id;
  const edge = await client.createEdge(team.team_id, [dana, triager]);
  threadId = (await client.openThread(edge.edge_id, { sender_agent_id: dana, subject: 'Ticket 9', content: 'The printer is on fire' })).thread_id;
  // A rotation with grace 0: the old key is refused from now on.
  const [key] = await client.listOrgKeys(orgId);
  newKey = (await client.rotateOrgKey(orgId, key!.key_id, 0)).api_key;
  expect(await client.listOrganizations().then(() => 'works', (e: { code: string }) => e.code)).toBe('invalid_api_key');

  const dir = await mkdtemp(join(tmpdir(), 'teamctl-keyring-'));
  definition = join(dir, 'team.yaml');
  await writeFile(
    definition,
    ['apiVersion: teamctl/v1', 'organization:', '  name: keyring-org', 'teams:', '  - name: desk', '    humans:', '      - name: dana', '      - name: triager', '    edges:', '      - [dana, triager]', ''].join('\n'),
  );
});

beforeEach(() => {
  recorder = recordHeader('x-api-key');
  keysSent = recorder.values;
});

afterEach(() => {
  recorder?.restore();
  vi.restoreAllMocks();
});

afterAll(async () => {
  await server?.close();
});

describe('teamctl --api-key-env (the organization keyring)', () => {
  it('keyring: with --api-key-env A --api-key-env B, thread list fails over from the key rotated out in A to the new key in B after one refused request', async () => {
    const result = await teamctl(['thread', 'list', '--team', 'desk', '--api-key-env', 'KEY_A', '--api-key-env', 'KEY_B'], { KEY_A: oldKey, KEY_B: newKey });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(threadId);
    expect(result.stdout).toContain('dana <-> triager');
    // No probe and no storm: the first request is refused once, every later one goes out on B.
    expect(keysSent[0]).toBe(oldKey);
    expect(keysSent.filter((k) => k === oldKey)).toHaveLength(1);
    expect(keysSent.slice(1).every((k) => k === newKey)).toBe(true);
    expect(result.stdout + result.stderr).not.toContain(newKey);
  });

  it('keyring: thread send fails over too, and the refused first attempt writes nothing, so the message is sent once', async () => {
    const sent = await teamctl(['thread', 'send', threadId, '--from', 'triager', '--content', 'On it', '--api-key-env', 'KEY_A', '--api-key-env', 'KEY_B'], { KEY_A: oldKey, KEY_B: newKey });
    expect(sent.code, sent.stderr).toBe(0);
    const shown = await teamctl(['thread', 'show', threadId, '--json', '--api-key-env', 'KEY_A', '--api-key-env', 'KEY_B'], { KEY_A: oldKey, KEY_B: newKey });
    expect(shown.code, shown.stderr).toBe(0);
    const messages = (JSON.parse(shown.stdout) as { messages: Array<{ sender: string; content: string }> }).messages;
    expect(messages.filter((m) => m.content === 'On it')).toEqual([expect.objectContaining({ sender: 'triager' })]);
  });

  it('keyring: plan and apply run their activities on the keyring, so a key rotated out in A falls back to B', async () => {
    const ring = ['--api-key-env', 'KEY_A', '--api-key-env', 'KEY_B'];
    const env = { KEY_A: oldKey, KEY_B: newKey };
    const plan = await teamctl(['plan', '-f', definition, '--json', '--detailed-exitcode', ...ring], env);
    expect(plan.stderr).toBe('');
    expect({ code: plan.code, plan: JSON.parse(plan.stdout) }).toEqual({ code: 0, plan: { changes: [] } });

    const grown = definition.replace(/team\.yaml$/, 'grown.yaml');
    await writeFile(grown, ['apiVersion: teamctl/v1', 'organization:', '  name: keyring-org', 'teams:', '  - name: desk', '    humans:', '      - name: dana', '      - name: triager', '      - name: eve', '    edges:', '      - [dana, triager]', ''].join('\n'));
    const applied = await teamctl(['apply', '-f', grown, ...ring], env);
    expect(applied.code, applied.stderr).toBe(0);
    const [team] = (await new AcsClient({ baseUrl: server.url, apiKey: newKey }).listTeams(orgId)).filter((t) => t.team_name === 'desk');
    const humans = await new AcsClient({ baseUrl: server.url, apiKey: newKey }).listHumans(team!.team_id);
    expect(humans.map((h) => h.name).sort()).toEqual(['dana', 'eve', 'triager']);
  });

  it('keyring: without --api-key-env the keyring is ACS_API_KEY then ACS_API_KEY_NEXT, kept even where ACS_API_KEY_NEXT is unset, and a command fails over to it', async () => {
    const only = resolveConnection({}, { ACS_BASE_URL: server.url, ACS_API_KEY: newKey });
    expect(only).toEqual({ baseUrl: server.url, apiKeyEnv: 'ACS_API_KEY', apiKeyEnvFallbacks: ['ACS_API_KEY_NEXT'] });
    expect(JSON.stringify(only)).not.toContain(newKey);

    const result = await teamctl(['thread', 'list', '--team', 'desk'], { ACS_API_KEY: oldKey, ACS_API_KEY_NEXT: newKey });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(threadId);
    expect(keysSent.filter((k) => k === oldKey)).toHaveLength(1);
  });

  it('keyring: --api-key-env keeps the order given, and a single --api-key-env is a keyring of one, without the default fallback', () => {
    const env = { ACS_BASE_URL: 'http://acs.test', B: 'b' };
    expect(resolveConnection({ apiKeyEnv: ['B', 'A', 'C'] }, env)).toEqual({ baseUrl: 'http://acs.test', apiKeyEnv: 'B', apiKeyEnvFallbacks: ['A', 'C'] });
    expect(resolveConnection({ apiKeyEnv: ['B'] }, env)).toEqual({ baseUrl: 'http://acs.test', apiKeyEnv: 'B' });
  });

  it('keyring: a --api-key-env that is not a variable name is invalid_usage, and nothing is sent', async () => {
    const result = await teamctl(['thread', 'list', '--team', 'desk', '--api-key-env', 'KEY_A', '--api-key-env', 'KEY-B'], { KEY_A: newKey });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('error[invalid_usage]: --api-key-env: not a variable name: KEY-B');
    expect(keysSent).toEqual([]);
  });

  it('keyring: with no variable of the keyring set, the command fails with unresolved_secret naming every variable and no key value', async () => {
    const result = await teamctl(['thread', 'list', '--team', 'desk', '--api-key-env', 'KEY_A', '--api-key-env', 'KEY_B'], { UNRELATED: newKey });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('error[unresolved_secret]:');
    expect(result.stderr).toContain('KEY_A, KEY_B');
    expect(result.stderr).not.toContain(newKey);
    expect(keysSent).toEqual([]);
  });

  it('keyring: with the default keyring unset, unresolved_secret asks for ACS_API_KEY and names ACS_API_KEY_NEXT', async () => {
    const result = await teamctl(['plan', '-f', definition], {});
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/error\[unresolved_secret\]: environment variable ACS_API_KEY .*set ACS_API_KEY/);
    expect(result.stderr).toContain('ACS_API_KEY_NEXT');
  });

  it('keyring: when every key is refused, the command fails with keys_refused naming the variables, never a value, after one try per key', async () => {
    const result = await teamctl(['thread', 'list', '--team', 'desk', '--api-key-env', 'KEY_A', '--api-key-env', 'KEY_B'], { KEY_A: oldKey, KEY_B: oldKey });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('error[keys_refused]:');
    expect(result.stderr).toContain('KEY_A (invalid_api_key');
    expect(result.stderr).toContain('KEY_B (invalid_api_key');
    expect(result.stderr).not.toContain(oldKey);
    expect(keysSent).toEqual([oldKey, oldKey]);
  });

  it('keyring: a keyring of one refused key fails with the service\'s invalid_api_key, as without a keyring', async () => {
    const result = await teamctl(['thread', 'list', '--team', 'desk', '--api-key-env', 'KEY_A'], { KEY_A: oldKey });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('error[invalid_api_key]:');
    expect(result.stderr).not.toContain(oldKey);
  });
});
