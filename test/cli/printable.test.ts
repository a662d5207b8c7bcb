/**
 * Terminal escapes in service data (issue 21, defect 5): the service refuses control characters in
 * names, and whatever still reaches the CLI (message content, which agents and LLMs write; names
 * stored before the rule or by another implementation of the service) is printed visibly, never
 * obeyed, by every command: `thread show`, `thread follow`, `thread list`, `get`, errors.
 */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcsClient } from '../../client/acs-client.ts';
import { printableIo, type CliIo } from '../../cli/io.ts';
import { printable } from '../../cli/printable.ts';
import { startServer } from '../../service/index.ts';
import type { Db } from '../../service/storage/db.ts';
import { openDb } from '../../service/storage/open-db.ts';
import { runTeamctl, type CliRun } from '../support/cli.ts';

// The hostile sequences of the issue: retitle the window (OSC … BEL), clear the screen, move the
// cursor up (to overwrite the line above), plus a carriage return and an 8-bit CSI.
const hostile = 'ok\u001b]0;pwned\u0007\u001b[2J\u001b[1A\rforged\u009b31m';
// Anything a terminal would act on: C0 but tab and newline, DEL, C1.
const raw = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

describe('printable', () => {
  it('printable: control characters become \\uXXXX escapes, tab, newline and other text stay as they are', () => {
    expect(printable(hostile)).toBe('ok\\u001b]0;pwned\\u0007\\u001b[2J\\u001b[1A\\u000dforged\\u009b31m');
    expect(printable('tab\there\nnext line, é, 日本, 🙂')).toBe('tab\there\nnext line, é, 日本, 🙂');
  });

  it('printable: JSON and YAML keep their meaning, since both read the escape inside a quoted string as the character', () => {
    const json = JSON.stringify({ content: 'a\u007fb\u0085c\u001bd' });
    expect(JSON.parse(printable(json))).toEqual({ content: 'a\u007fb\u0085c\u001bd' });
  });

  it('printableIo: the CLI\'s own colours still reach a terminal, while escapes in the text and forged colour marks are shown, not obeyed', () => {
    const written: string[] = [];
    const io: CliIo = {
      stdout: (t) => void written.push(t),
      stderr: (t) => void written.push(t),
      env: {},
      isTTY: false,
      style: (format, text) => `\u001b[${format === 'green' ? 32 : 1}m${text}\u001b[${format === 'green' ? 39 : 22}m`,
    };
    const safe = printableIo(io);
    safe.stdout(`${safe.style!('green', `+ create ${safe.style!('bold', 'team/a\u001b[2J')}`)} \u0000forged+green\u0000`);
    expect(written).toEqual(['\u001b[32m+ create \u001b[1mteam/a\\u001b[2J\u001b[22m\u001b[39m \\u0000forged+green\\u0000']);
  });
});

describe('teamctl output of hostile service data', () => {
  let db: Db;
  let server: Awaited<ReturnType<typeof startServer>>;
  let apiKey: string;
  let threadId: string;
  const teamctl = (args: string[]): Promise<CliRun> => runTeamctl(args, { ACS_BASE_URL: server.url, ACS_API_KEY: apiKey });
  const expectSafe = (run: CliRun) => {
    expect(run.stdout + run.stderr).not.toMatch(raw);
  };

  beforeAll(async () => {
    db = await openDb({ inMemory: true });
    server = await startServer({ db, port: 0, tickMs: 60_000, logger: false });
    const org = await server.provisionOrganization('escapes');
    apiKey = org.api_key;
    const client = new AcsClient({ baseUrl: server.url, apiKey });
    const team = await client.createTeam(org.org_id, { team_name: 'desk' });
    const dana = (await client.createHuman(team.team_id, { name: 'dana' })).human_id;
    const eve = (await client.createHuman(team.team_id, { name: 'eve' })).human_id;
    const edge = await client.createEdge(team.team_id, [dana, eve]);
    threadId = (await client.openThread(edge.edge_id, { sender_agent_id: dana, subject: `Subject ${hostile}`, content: `Content ${hostile}` })).thread_id;
    // The API refuses such a name now (below); one stored before the rule still reaches clients.
    await db.query(`UPDATE participants SET name = $1 WHERE id = $2`, [`eve${hostile}`, eve]);
  });

  afterAll(async () => {
    await server?.close();
  });

  it('names: the API refuses a control character other than tab and newline in a name (400 naming the field), as definitions do', async () => {
    const client = new AcsClient({ baseUrl: server.url, apiKey });
    const org = (await client.listOrganizations())[0]!;
    await expect(client.createTeam(org.org_id, { team_name: 'evil\u001b[2J' })).rejects.toMatchObject({ status: 400, code: 'invalid_request' });
    await expect(client.createTeam(org.org_id, { team_name: 'bell\u0007' })).rejects.toMatchObject({ status: 400 });
    await expect(client.createTeam(org.org_id, { team_name: 'csi\u009b2J' })).rejects.toMatchObject({ status: 400 });
    expect((await client.createTeam(org.org_id, { team_name: 'tab\tand\nnewline' })).team_name).toBe('tab\tand\nnewline');
  });

  it('thread show: message content, subject and sender names with escape sequences are printed as \\u escapes', async () => {
    const shown = await teamctl(['thread', 'show', threadId]);
    expect(shown.code, shown.stderr).toBe(0);
    expectSafe(shown);
    expect(shown.stdout).toContain('Content ok\\u001b]0;pwned\\u0007\\u001b[2J\\u001b[1A\\u000dforged\\u009b31m');
    expect(shown.stdout).toContain('Subject ok\\u001b]0;pwned');
    const json = await teamctl(['thread', 'show', threadId, '--json']);
    expectSafe(json);
    expect((JSON.parse(json.stdout) as { messages: Array<{ content: string }> }).messages[0]!.content).toBe(`Content ${hostile}`);
  });

  it('thread list and get: names with escape sequences are printed as \\u escapes, in tables, JSON and YAML', async () => {
    for (const args of [
      ['thread', 'list', '--team', 'desk'],
      ['get', 'humans', '--team', 'desk'],
      ['get', 'humans', '--team', 'desk', '-o', 'yaml'],
      ['get', 'threads', '--team', 'desk', '-o', 'json'],
    ]) {
      const run = await teamctl(args);
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(0);
      expectSafe(run);
      // YAML writes ESC as \e in a quoted string by itself; either way it is shown, not obeyed.
      expect(run.stdout, args.join(' ')).toMatch(/eveok\\(u001b|e)\]0;pwned/);
    }
  });

  it('errors: a did-you-mean listing hostile names prints them as \\u escapes', async () => {
    const run = await teamctl(['thread', 'send', threadId, '--from', 'nobody', '--content', 'hi']);
    expect(run.code).toBe(1);
    expectSafe(run);
  });

  it('thread follow: a hostile message arriving while following is printed as \\u escapes by the real program', async () => {
    const child = spawn(process.execPath, ['bin/teamctl.ts', 'thread', 'follow', threadId], {
      cwd: resolve(import.meta.dirname, '..', '..'),
      env: { ...process.env, ACS_BASE_URL: server.url, ACS_API_KEY: apiKey },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
    const until = async (text: string) => {
      for (let i = 0; i < 300 && !output.includes(text); i++) await new Promise((r) => setTimeout(r, 100));
      expect(output).toContain(text);
    };
    try {
      await until('Content ok');
      const client = new AcsClient({ baseUrl: server.url, apiKey });
      const page = await client.getThread(threadId);
      await client.appendMessage(threadId, { sender_agent_id: page.messages[0]!.sender_id, content: `Later ${hostile}` });
      await until('Later ok');
      child.kill('SIGINT');
      expect(await exited).toBe(0);
      expect(output).not.toMatch(raw);
      expect(output).toContain('Later ok\\u001b]0;pwned\\u0007');
    } finally {
      child.kill('SIGKILL');
    }
  });
});
