/**
 * Output that fits the terminal, and commands that end on a signal: teamctl run as a person
 * runs it, on a pseudo-terminal of a chosen size (`test/support/pty.ts`), against a real
 * acs-server. A spinner is drawn only on a usable terminal; a 0-column one (which used to make
 * `apply` redraw forever and ignore SIGTERM) gets plain lines.
 */
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { terminalCapabilities } from '../../cli/terminal.ts';
import { AcsClient } from '../../client/acs-client.ts';
import { startServer } from '../../service/index.ts';
import { runOnPty } from '../support/pty.ts';

const root = resolve(import.meta.dirname, '../..');
const teamctlBin = resolve(root, 'bin/teamctl.ts');
const example = resolve(root, 'examples/acme-research.yaml');
/** The braille frames of the spinner (ora's "dots"). */
const SPINNER = /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/;
let server: Awaited<ReturnType<typeof startServer>>;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false });
  const org = await server.provisionOrganization('terminal');
  const client = new AcsClient({ baseUrl: server.url, apiKey: org.api_key });
  const team = await client.createTeam(org.org_id, { team_name: 'desk' });
  const dana = (await client.createHuman(team.team_id, { name: 'dana' })).human_id;
  const bob = (await client.createHuman(team.team_id, { name: 'bob' })).human_id;
  await client.createEdge(team.team_id, [dana, bob]);
  const { CI: _ci, NO_COLOR: _noColor, ...rest } = process.env;
  env = { ...rest, TERM: 'xterm-256color', ACS_BASE_URL: server.url, ACS_API_KEY: org.api_key, ECHO_PROVIDER_KEY: 'terminal-echo', TEAMCTL_CONFIG: '/nonexistent/teamctl.yaml' };
});

afterAll(async () => {
  await server?.close();
});

/** A definition file's organization renamed, so each apply has something to create. */
async function exampleAs(name: string): Promise<string> {
  const { mkdtemp, readFile, writeFile } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const file = resolve(await mkdtemp(resolve(tmpdir(), 'teamctl-pty-')), 'team.yaml');
  await writeFile(file, (await readFile(example, 'utf8')).replace('name: acme-research', `name: ${name}`));
  return file;
}

describe('terminalCapabilities', () => {
  const tty = { isTTY: true, columns: 80 };
  it('a terminal with a width gets progress and colour', () => {
    expect(terminalCapabilities({ stdout: tty, stderr: tty }, {})).toEqual({ progress: true, color: true });
  });
  it('NO_COLOR, TERM=dumb and 0 columns turn both off', () => {
    expect(terminalCapabilities({ stdout: tty, stderr: tty }, { NO_COLOR: '1' })).toEqual({ progress: false, color: false });
    expect(terminalCapabilities({ stdout: tty, stderr: tty }, { TERM: 'dumb' })).toEqual({ progress: false, color: false });
    expect(terminalCapabilities({ stdout: { isTTY: true, columns: 0 }, stderr: tty }, {})).toEqual({ progress: false, color: false });
  });
  it('stdout that is not a terminal turns both off; CI keeps colour but no progress', () => {
    expect(terminalCapabilities({ stdout: { isTTY: false }, stderr: tty }, {})).toEqual({ progress: false, color: false });
    expect(terminalCapabilities({ stdout: tty, stderr: tty }, { CI: 'true' })).toEqual({ progress: false, color: true });
  });
});

describe('teamctl on a terminal', () => {
  it('apply on a 0-column terminal finishes with plain lines and no spinner', async () => {
    const run = runOnPty([process.execPath, teamctlBin, 'apply', '-f', await exampleAs('pty-zero')], { rows: 0, columns: 0, env });
    expect(await run.exited).toBe(0);
    expect(run.output()).toContain('Apply complete: 8 created');
    expect(run.output()).not.toMatch(SPINNER);
    expect(run.output().length).toBeLessThan(4_000);
  }, 60_000);

  it('apply on an 80-column terminal draws the spinner, and not with NO_COLOR set', async () => {
    const drawn = runOnPty([process.execPath, teamctlBin, 'apply', '-f', await exampleAs('pty-wide')], { rows: 24, columns: 80, env });
    expect(await drawn.exited).toBe(0);
    expect(drawn.output()).toMatch(SPINNER);
    const plain = runOnPty([process.execPath, teamctlBin, 'apply', '-f', await exampleAs('pty-no-color')], { rows: 24, columns: 80, env: { ...env, NO_COLOR: '1' } });
    expect(await plain.exited).toBe(0);
    expect(plain.output()).toContain('Apply complete');
    expect(plain.output()).not.toMatch(SPINNER);
  }, 60_000);

  it('apply on a terminal shows the plan in colour and asks before deleting: typing no changes nothing, typing yes deletes', async () => {
    const file = await exampleAs('pty-consent');
    expect(await runOnPty([process.execPath, teamctlBin, 'apply', '-f', file], { rows: 24, columns: 100, env }).exited).toBe(0);
    const { readFile, writeFile } = await import('node:fs/promises');
    const text = await readFile(file, 'utf8');
    // The external agent and its edge leave the file: the next apply deletes them.
    await writeFile(file, text.replace(/\n {6}- name: archivist.*/, '').replace('\n      - [scout, archivist]', ''));
    const client = new AcsClient({ baseUrl: server.url, apiKey: env.ACS_API_KEY! });
    const agents = async () => {
      const org = (await client.listOrganizations()).find((o) => o.org_name === 'pty-consent')!;
      const team = (await client.listTeams(org.org_id))[0]!;
      return (await client.getTeam(team.team_id)).agents.map((a) => a.name).sort();
    };
    expect(await agents()).toEqual(['archivist', 'scout']);

    const refused = runOnPty([process.execPath, teamctlBin, 'apply', '-f', file], { rows: 24, columns: 100, env });
    await refused.waitFor("Only 'yes' will be accepted");
    refused.write('no\r');
    expect(await refused.exited).toBe(1);
    // The delete in red, as on any terminal that takes colour; then the refusal.
    expect(refused.output()).toContain('\u001b[31m- delete\u001b[39m');
    expect(refused.output()).toContain('team/literature-review/agent/archivist');
    expect(refused.output()).toContain('error[not_approved]');
    expect(await agents()).toEqual(['archivist', 'scout']);

    // Ctrl-C at the question is a no: said on a line of its own, nothing changed.
    const interrupted = runOnPty([process.execPath, teamctlBin, 'apply', '-f', file], { rows: 24, columns: 100, env });
    await interrupted.waitFor("Only 'yes' will be accepted");
    interrupted.write('\u0003');
    expect(await interrupted.exited).toBe(1);
    expect(interrupted.output()).toMatch(/Enter a value: [^\n]*\r?\nerror\[not_approved\]: the question was interrupted \(Ctrl-C\): nothing was changed/);
    expect(await agents()).toEqual(['archivist', 'scout']);

    const approved = runOnPty([process.execPath, teamctlBin, 'apply', '-f', file], { rows: 24, columns: 100, env });
    await approved.waitFor("Only 'yes' will be accepted");
    approved.write('yes\r');
    expect(await approved.exited).toBe(0);
    expect(await agents()).toEqual(['scout']);
  }, 120_000);

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`a command waiting for a reply ends on ${signal}, on a 0-column terminal too`, async () => {
      const run = runOnPty([process.execPath, teamctlBin, 'thread', 'open', '--team', 'desk', '--from', 'dana', '--to', 'bob', '--content', 'anyone?', '--wait', '600'], { rows: 0, columns: 0, env });
      await run.waitFor('Opened thread');
      process.kill(await run.pid, signal);
      expect(await run.exited).toBe(signal === 'SIGTERM' ? 143 : 130);
    }, 60_000);
  }
});
