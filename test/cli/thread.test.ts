/**
 * `teamctl thread send | show | list | follow` against a real acs-server: in-process through
 * `runCli`, and `follow` as a user runs it (a child process stopped with Ctrl-C).
 */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcsClient } from '../../client/acs-client.ts';
import { startServer } from '../../service/index.ts';
import { runTeamctl } from '../support/cli.ts';
import type { CliRun } from '../support/cli.ts';

let server: Awaited<ReturnType<typeof startServer>>;
let apiKey: string;
let client: AcsClient;
let dana: string;
let triager: string;
let threadId: string;

const teamctl = (args: string[]): Promise<CliRun> => runTeamctl(args, { ACS_BASE_URL: server.url, ACS_API_KEY: apiKey });

beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false });
  const org = await server.provisionOrganization('cli-threads');
  apiKey = org.api_key;
  client = new AcsClient({ baseUrl: server.url, apiKey });
  const team = await client.createTeam(org.org_id, { team_name: 'desk' });
  dana = (await client.createHuman(team.team_id, { name: 'dana' })).human_id;
  triager = (await client.createHuman(team.team_id, { name: 'triager' })).human_id;
  const eve = (await client.createHuman(team.team_id, { name: 'eve' })).human_id;
  const edge = await client.createEdge(team.team_id, [dana, triager]);
  await client.createEdge(team.team_id, [dana, eve]);
  threadId = (await client.openThread(edge.edge_id, { sender_agent_id: dana, subject: 'Ticket 7', content: 'The VPN is down' })).thread_id;
});

afterAll(async () => {
  await server?.close();
});

describe('teamctl thread', () => {
  it('thread send and show: a message sent by participant name shows up in order with names, and --json names the senders', async () => {
    const sent = await teamctl(['thread', 'send', threadId, '--from', 'triager', '--content', 'Looking into it']);
    expect(sent.code, sent.stderr).toBe(0);
    const shown = await teamctl(['thread', 'show', threadId]);
    expect(shown.code).toBe(0);
    const lines = shown.stdout.trim().split('\n');
    expect(lines[0]).toContain('Thread');
    expect(lines[0]).toContain('"Ticket 7" in team desk');
    expect(lines.slice(1).map((l) => l.replace(/^\S+ /, ''))).toEqual(['dana: The VPN is down', 'triager: Looking into it']);
    const json = JSON.parse((await teamctl(['thread', 'show', threadId, '--json'])).stdout) as { messages: Array<{ sender: string; content: string }> };
    expect(json.messages.map((m) => [m.sender, m.content])).toEqual([['dana', 'The VPN is down'], ['triager', 'Looking into it']]);
  });

  it('thread send: a participant who is not on the thread\'s edge is refused and nothing is written', async () => {
    const before = (await client.getThread(threadId)).message_count;
    const result = await teamctl(['thread', 'send', threadId, '--from', 'eve', '--content', 'me too']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('error[not_a_participant]');
    expect((await client.getThread(threadId)).message_count).toBe(before);
  });

  it('thread list: lists the team\'s threads with who is on them; --between keeps one pair, and a pair with no edge is refused by name', async () => {
    const all = await teamctl(['thread', 'list', '--team', 'desk']);
    expect(all.code).toBe(0);
    expect(all.stdout).toContain(threadId);
    expect(all.stdout).toContain('dana <-> triager');
    const none = await teamctl(['thread', 'list', '--team', 'desk', '--between', 'dana,eve']);
    expect(none.stdout.trim()).toBe('No threads in team desk between dana,eve.');
    const refused = await teamctl(['thread', 'list', '--team', 'desk', '--between', 'triager,eve']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('no edge joins triager and eve in team desk');
  });

  it('thread open: the same participant at both ends is refused by name, and no thread is opened', async () => {
    const before = (await teamctl(['thread', 'list', '--team', 'desk', '--json'])).stdout;
    const result = await teamctl(['thread', 'open', '--team', 'desk', '--from', 'dana', '--to', 'dana', '--content', 'hello me']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('--from and --to both name dana');
    expect((await teamctl(['thread', 'list', '--team', 'desk', '--json'])).stdout).toBe(before);
  });

  it('thread follow: prints the thread, then each message as it arrives, and Ctrl-C ends it with exit 0', async () => {
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
      await until('dana: The VPN is down');
      await client.appendMessage(threadId, { sender_agent_id: triager, content: 'Fixed: the certificate had expired' });
      await until('triager: Fixed: the certificate had expired');
      child.kill('SIGINT');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
