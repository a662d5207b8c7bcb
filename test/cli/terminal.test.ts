/**
 * Output that fits the terminal, and commands that end on a signal: teamctl run as a person
 * runs it, on a pseudo-terminal of a chosen size (`test/support/pty.ts`), against a real
 * acs-server. A spinner is drawn only on a usable terminal; a 0-column one (which used to make
 * `apply` redraw forever and ignore SIGTERM) gets plain lines. A reply as it is written grows on
 * its line (`thread send --wait`, `thread follow`), appended without a control character.
 */
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { terminalCapabilities } from '../../cli/terminal.ts';
import { AcsClient } from '../../client/acs-client.ts';
import { startServer } from '../../service/index.ts';
import { runOnPty } from '../support/pty.ts';
import { startStreamDropProxy } from './stream-drop-proxy.ts';

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

  /** A definition applied under `name`, then with its external agent and that agent's edge removed: the next apply deletes them. */
  async function appliedThenShrunk(name: string): Promise<{ file: string; agents: () => Promise<string[]> }> {
    const file = await exampleAs(name);
    expect(await runOnPty([process.execPath, teamctlBin, 'apply', '-f', file], { rows: 24, columns: 100, env }).exited).toBe(0);
    const { readFile, writeFile } = await import('node:fs/promises');
    await writeFile(file, (await readFile(file, 'utf8')).replace(/\n {6}- name: archivist.*/, '').replace('\n      - [scout, archivist]', ''));
    const client = new AcsClient({ baseUrl: server.url, apiKey: env.ACS_API_KEY! });
    const agents = async () => {
      const org = (await client.listOrganizations()).find((o) => o.org_name === name)!;
      const team = (await client.listTeams(org.org_id))[0]!;
      return (await client.getTeam(team.team_id)).agents.map((a) => a.name).sort();
    };
    return { file, agents };
  }

  /** The exit status of a pty run, or a failure naming what it printed when it does not end within a minute (a shell left waiting for lines that were eaten). */
  async function ended(run: ReturnType<typeof runOnPty>): Promise<number> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        void run.pid.then((pid) => process.kill(pid, 'SIGKILL'));
        reject(new Error(`still running after a minute; it printed:\n${run.output()}`));
      }, 60_000);
    });
    try {
      return await Promise.race([run.exited, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  it('a consent question inside a block pasted into a shell takes only the next line as its answer: the lines after it run', async () => {
    const { file, agents } = await appliedThenShrunk('pty-pasted');
    // An interactive shell on the terminal; the block arrives at once, as a paste does (without
    // bracketed paste, the lines wait in the terminal while each command runs).
    const shell = runOnPty(['bash', '--norc', '--noprofile', '-i'], { rows: 24, columns: 200, env: { ...env, PS1: '$ ' } });
    shell.write(`"${process.execPath}" "${teamctlBin}" apply -f "${file}"\necho answer-$((2+2))\necho after-$((1+1))\necho last-$((3+3))\nexit\n`);
    expect(await ended(shell)).toBe(0);
    const output = shell.output();
    expect(output).toContain("Only 'yes' will be accepted");
    // The line after the apply was its answer (not run), and not yes: nothing changed.
    expect(output).toContain('error[not_approved]: "echo answer-$((2+2))" is not yes: nothing was changed');
    expect(output).toContain('hint: read the plan (teamctl plan -f FILE), then run again on a terminal and type yes, or pass --auto-approve (CI, and blocks pasted into a shell: the line after the command is read as the answer)');
    // (The shell echoes each line as typed, `$((2+2))` and all: only running it prints answer-4.)
    expect(output).not.toContain('answer-4');
    // Every later line ran.
    expect(output).toContain('after-2');
    expect(output).toContain('last-6');
    expect(await agents()).toEqual(['archivist', 'scout']);
  }, 180_000);

  it('a script fed to bash on stdin asks on the terminal, not its stdin: typing yes deletes, and the script goes on', async () => {
    const { file, agents } = await appliedThenShrunk('pty-piped');
    const { mkdtemp, writeFile } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const script = resolve(await mkdtemp(resolve(tmpdir(), 'teamctl-script-')), 'setup.sh');
    await writeFile(script, `"${process.execPath}" "${teamctlBin}" apply -f "${file}"\necho after-$((1+1))\n`);
    const run = runOnPty(['bash', '-c', 'bash < "$0"', script], { rows: 24, columns: 200, env });
    await run.waitFor("Only 'yes' will be accepted");
    run.write('yes\r');
    expect(await ended(run)).toBe(0);
    expect(run.output()).toContain('after-2');
    expect(await agents()).toEqual(['scout']);
  }, 180_000);

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`a command waiting for a reply ends on ${signal}, on a 0-column terminal too`, async () => {
      const run = runOnPty([process.execPath, teamctlBin, 'thread', 'open', '--team', 'desk', '--from', 'dana', '--to', 'bob', '--content', 'anyone?', '--wait', '600'], { rows: 0, columns: 0, env });
      await run.waitFor('Opened thread');
      process.kill(await run.pid, signal);
      expect(await run.exited).toBe(signal === 'SIGTERM' ? 143 : 130);
    }, 60_000);
  }
});

describe('teamctl on a terminal: replies as they are written', () => {
  /** A server of its own whose echo writes a word every 80 ms (`ACS_ECHO_STREAM_MS`). */
  let paced: Awaited<ReturnType<typeof startServer>>;
  let client: AcsClient;
  let pacedEnv: NodeJS.ProcessEnv;
  let studio: { dana: string; writer: string; edge: string };
  const words = (count: number, label: string) => Array.from({ length: count }, (_, i) => `${label}${i + 1}`).join(' ');

  beforeAll(async () => {
    paced = await startServer({ inMemory: true, port: 0, tickMs: 50, logger: false, env: { ...process.env, ACS_ECHO_STREAM_MS: '80' } });
    const org = await paced.provisionOrganization('terminal-streams');
    client = new AcsClient({ baseUrl: paced.url, apiKey: org.api_key });
    await client.putProviderKey(org.org_id, 'echo', 'echo-key');
    const team = await client.createTeam(org.org_id, { team_name: 'studio' });
    const dana = (await client.createHuman(team.team_id, { name: 'dana' })).human_id;
    const writer = (await client.createAgent(team.team_id, { name: 'writer', provider: 'echo' })).agent_id;
    const edge = (await client.createEdge(team.team_id, [dana, writer])).edge_id;
    studio = { dana, writer, edge };
    pacedEnv = { ...env, ACS_BASE_URL: paced.url, ACS_API_KEY: org.api_key };
  });
  afterAll(async () => {
    await paced?.close();
  });

  /** A thread of dana with writer whose first exchange is done. */
  async function threadWithWriter(): Promise<string> {
    const opened = await client.openThread(studio.edge, { sender_agent_id: studio.dana, content: 'hello' });
    for (let i = 0; i < 400 && (await client.getThread(opened.thread_id)).messages.length < 2; i++) await new Promise((r) => setTimeout(r, 25));
    return opened.thread_id;
  }

  it('thread send --wait on a terminal: the reply grows on its line as it is written, then the line ends, with no control character', async () => {
    const thread = await threadWithWriter();
    const content = words(20, 'tty');
    const run = runOnPty([process.execPath, teamctlBin, 'thread', 'send', thread, '--from', 'dana', '--content', content, '--wait', '60'], { rows: 24, columns: 100, env: pacedEnv });
    // What the terminal shows after "Sent …", looked at as it grows.
    const partial = new Set<string>();
    const look = setInterval(() => {
      const shown = /Sent \S+ to thread \S+\.\r\n(.*)$/s.exec(run.output())?.[1];
      if (shown && !shown.includes('\n')) partial.add(shown);
    }, 20);
    const code = await run.exited;
    clearInterval(look);
    expect(code, run.output()).toBe(0);
    const final = `writer: echo: ${content}`;
    expect(run.output().endsWith(`${final}\r\n`)).toBe(true);
    expect(run.output().split(final)).toHaveLength(2);
    // Several lengths of the line were on screen before it ended, each the start of the reply.
    const growing = [...partial].filter((p) => p.length > 'writer: '.length && p !== final);
    expect(growing.length, JSON.stringify([...partial])).toBeGreaterThanOrEqual(3);
    for (const text of growing) expect(final.startsWith(text), text).toBe(true);
    // Appended, never redrawn: no escape sequence, no carriage return but the terminal's own line ends.
    expect(run.output()).not.toContain('\u001b');
    expect(run.output().replaceAll('\r\n', '\n')).not.toContain('\r');
  }, 60_000);

  it('thread follow on a terminal: a reply grows on one line across two cut connections, each word once, and a stopped one ends with [stopped]', async () => {
    const proxy = await startStreamDropProxy(paced.url);
    const thread = await threadWithWriter();
    const run = runOnPty([process.execPath, teamctlBin, 'thread', 'follow', thread], { rows: 24, columns: 100, env: { ...pacedEnv, ACS_BASE_URL: proxy.url } });
    try {
      await run.waitFor('writer: echo: hello');
      for (let i = 0; i < 400 && proxy.streamRequests.length === 0; i++) await new Promise((r) => setTimeout(r, 25));
      const content = words(200, 'follow');
      await client.appendMessage(thread, { sender_agent_id: studio.dana, content });
      for (const [cut, deltas] of [[1, 3], [2, 8]] as const) {
        for (let i = 0; i < 400 && proxy.deltas() < deltas; i++) await new Promise((r) => setTimeout(r, 25));
        expect(proxy.dropStreams()).toBe(1);
        for (let i = 0; i < 400 && proxy.streamRequests.length <= cut; i++) await new Promise((r) => setTimeout(r, 25));
        expect(proxy.streamRequests[cut]).toMatch(/^\d+\.\d+$/);
      }
      await run.waitFor('follow12 ');
      expect((await client.stopThread(thread)).stopping).toBe(1);
      await run.waitFor('[stopped]');
      const reply = (await client.getThread(thread)).messages.at(-1)!;
      expect(reply).toMatchObject({ sender_id: studio.writer, stopped: true });
      // The words as they came, on one line, across both resumes: none lost, none twice.
      const line = `writer: ${reply.content} [stopped]\r\n`;
      expect(run.output().split(line), run.output()).toHaveLength(2);
      expect(run.output().match(/follow1 /g)).toHaveLength(2);
      process.kill(await run.pid, 'SIGINT');
      expect(await run.exited).toBe(0);
    } finally {
      await proxy.close();
    }
  }, 60_000);
});
