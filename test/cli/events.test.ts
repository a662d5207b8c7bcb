/**
 * `teamctl events tail` against a real acs-server, run as a user runs it (a child process): the
 * organization's events as lines with names, or JSON lines, filtered by team and type, control
 * characters shown escaped, and Ctrl-C ending it with exit 0.
 */
import { spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcsClient } from '../../client/acs-client.ts';
import { startServer } from '../../service/index.ts';
import { runTeamctl } from '../support/cli.ts';

const root = resolve(import.meta.dirname, '../..');
let server: Awaited<ReturnType<typeof startServer>>;
let apiKey: string;
let client: AcsClient;
let orgId: string;

beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false });
  const provisioned = await server.provisionOrganization('tail-tests');
  apiKey = provisioned.api_key;
  orgId = provisioned.org_id;
  client = new AcsClient({ baseUrl: server.url, apiKey });
});
afterAll(async () => {
  await server?.close();
});

/** A team `name` with an agent `bot`, a human `dana` and their edge. */
async function team(name: string) {
  const t = await client.createTeam(orgId, { team_name: name });
  const bot = await client.createAgent(t.team_id, { name: 'bot' });
  const dana = await client.createHuman(t.team_id, { name: 'dana' });
  const edge = await client.createEdge(t.team_id, [dana.human_id, bot.agent_id]);
  return { teamId: t.team_id, botId: bot.agent_id, danaId: dana.human_id, edgeId: edge.edge_id };
}

/** `teamctl events tail ARGS` as a child process; `lines` fills as it prints. */
function tail(args: string[], target: { url: string; key: string } = { url: server.url, key: apiKey }) {
  const child = spawn(process.execPath, ['bin/teamctl.ts', 'events', 'tail', ...args], {
    cwd: root,
    env: { ...process.env, ACS_BASE_URL: target.url, ACS_API_KEY: target.key, NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  return {
    lines: () => out.split('\n').filter(Boolean),
    stderr: () => err,
    async until(check: (lines: string[]) => boolean, ms = 60_000): Promise<string[]> {
      const deadline = Date.now() + ms;
      while (!check(out.split('\n').filter(Boolean))) {
        if (Date.now() > deadline) {
          child.kill('SIGKILL');
          throw new Error(`events tail never printed what was expected:\n${out}\n${err}`);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      return out.split('\n').filter(Boolean);
    },
    stop(signal: NodeJS.Signals = 'SIGINT') {
      child.kill(signal);
      return exited;
    },
  };
}

/** Resolves once `check` holds (polling), or rejects after 60 s naming `what`. */
async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('teamctl events tail', () => {
  it('events tail: prints the log from --after as lines with team and participant names (control characters escaped), follows new events, and exits 0 on Ctrl-C', async () => {
    const { edgeId, danaId } = await team('tail-ops');
    const thread = await client.openThread(edgeId, { sender_agent_id: danaId, content: 'hello\u001b[2J bot', expects_reply: true });
    const run = tail(['--team', 'tail-ops', '--after', '0']);
    const first = await run.until((lines) => lines.some((l) => l.includes('message.created')));
    expect(first.map((l) => l.split('  ')[2])).toEqual(['team.created', 'agent.created', 'human.created', 'edge.created', 'thread.opened', 'message.created']);
    const message = first.find((l) => l.includes('message.created'))!;
    expect(message).toMatch(/^\d+  \d{4}-\d\d-\d\dT[\d:.]+Z  message\.created  tail-ops  dana -> bot: "hello\\u001b\[2J bot"  thread [0-9a-f-]{36}  \(expects a reply\)$/);
    expect(message).not.toContain('\u001b');
    expect(first.find((l) => l.includes('edge.created'))).toContain('dana <-> bot');

    // A participant created while tailing is named from its own event on.
    const eve = await client.createHuman(thread.team_id, { name: 'eve' });
    const bot = (await client.getTeam(thread.team_id)).agents[0]!;
    const second = await client.createEdge(thread.team_id, [eve.human_id, bot.agent_id]);
    await client.openThread(second.edge_id, { sender_agent_id: eve.human_id, content: 'hi' });
    const later = await run.until((lines) => lines.filter((l) => l.includes('message.created')).length === 2);
    expect(later.at(-1)).toContain('eve -> bot: "hi"');
    expect(await run.stop('SIGINT')).toBe(0);
  }, 120_000);

  it('events tail --json --types: one JSON object per line, only the types asked for, with a names map; another team\'s events are not shown with --team', async () => {
    const { edgeId, danaId, botId } = await team('tail-json');
    const other = await team('tail-other');
    const run = tail(['--team', 'tail-json', '--types', 'message.*', '--json']);
    // The stream starts from now: wait until it is connected by seeing an event written after it
    // started. Its start may take seconds on a loaded machine, so the pings go on (every half
    // second) until one is seen, not for a fixed number of tries.
    let checks = 0;
    const lines = await run.until((l) => {
      if (l.length === 0 && checks++ % 5 === 0) {
        void client.openThread(edgeId, { sender_agent_id: danaId, content: `ping ${checks}` });
        void client.openThread(other.edgeId, { sender_agent_id: other.danaId, content: 'elsewhere' });
      }
      return l.length > 0;
    });
    const event = JSON.parse(lines[0]!);
    expect(event.type).toBe('message.created');
    expect(event.team_id).not.toBe(other.teamId);
    expect(event.names).toEqual({ [danaId]: 'dana', [botId]: 'bot', [event.team_id]: 'tail-json' });
    expect(await run.stop('SIGTERM')).toBe(0);
    expect(run.lines().every((l) => JSON.parse(l).type === 'message.created' && JSON.parse(l).team_id === event.team_id)).toBe(true);
  }, 120_000);

  it('events tail: says on stderr when it lost the server and is reconnecting, and when it is back; the events after go on printing', async () => {
    // A server of its own on a data dir, stopped and started again on the same port: what is kept survives.
    const dataDir = await mkdtemp(join(tmpdir(), 'tail-restart-'));
    let own = await startServer({ dataDir, port: 0, tickMs: 60_000, logger: false });
    const port = Number(new URL(own.url).port);
    try {
      const org = await own.provisionOrganization('tail-restart');
      const ownClient = new AcsClient({ baseUrl: own.url, apiKey: org.api_key });
      const created = await ownClient.createTeam(org.org_id, { team_name: 'before' });
      const run = tail(['--org', 'tail-restart', '--after', '0'], { url: own.url, key: org.api_key });
      await run.until((lines) => lines.some((l) => l.includes('team.created') && l.includes('before')));
      expect(run.stderr()).toBe('');

      await own.close();
      await until(() => run.stderr().includes('events tail: lost'), 'events tail says it lost the server');
      // Once, however many reconnects fail meanwhile.
      await new Promise((r) => setTimeout(r, 2_500));
      expect(run.stderr()).toBe(`events tail: lost ACS at ${own.url} (the server ended the stream); reconnecting every second from after event 1 (Ctrl-C stops)\n`);

      own = await startServer({ dataDir, port, tickMs: 60_000, logger: false });
      await until(() => run.stderr().includes('reconnected'), 'events tail says it is back');
      expect(run.stderr().split('\n').at(-2)).toBe(`events tail: reconnected to ACS at ${own.url}; resuming after event 1, none missed`);
      await ownClient.updateTeam(created.team_id, { team_name: 'after' });
      const lines = await run.until((l) => l.some((line) => line.includes('team.updated')));
      expect(lines.filter((l) => l.includes('team.created'))).toHaveLength(1);
      expect(await run.stop('SIGINT')).toBe(0);
    } finally {
      await own.close();
    }
  }, 180_000);

  it('events tail: a bad --types is invalid_usage and an unknown team name_not_found, before anything is streamed', async () => {
    const env = { ACS_BASE_URL: server.url, ACS_API_KEY: apiKey };
    const bad = await runTeamctl(['events', 'tail', '--types', 'message.sent'], env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('error[invalid_usage]: --types: "message.sent" is not an event type or family');
    const missing = await runTeamctl(['events', 'tail', '--team', 'tail-opz'], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('error[name_not_found]');
  });
});
