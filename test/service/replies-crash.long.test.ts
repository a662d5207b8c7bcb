// Contract §13 across a kill -9: acs-server is killed (SIGKILL) while a provider agent's reply
// streams, the stand-in holding the stream half-way; after a restart on the same storage the reply
// is retried (the stand-in gets a second request), the thread's stream says so (`turn.restarted`
// for that message before the new deltas) to a reader that resumes with Last-Event-ID on the new
// process, and no half reply is ever posted. A stop asked of the retried reply, from a resumed
// stream, works. Real processes (bin/acs-server.ts) on a PGlite data dir, or on PostgreSQL in the
// `postgres` project.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { spawnAcsServer, type AcsProcess } from '../support/acs-process.ts';
import { paced } from '../support/model-script.ts';
import { scriptedToolCompletions, startOpenAiStub, type OpenAiStub, type StubRequest } from '../support/openai-stub.ts';
import { createTestDatabase, postgresBackend, testDatabaseUrl } from '../support/postgres.ts';
import { request, type Reply } from './helpers.ts';
import { deltasOf, describe as describeItems, readThread, type Item, type ThreadReader } from './stream-helpers.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
});

/** Where the server keeps its data: a fresh data dir, or a fresh PostgreSQL database in the `postgres` project. */
async function storageArgs(): Promise<{ args: string[]; env: Record<string, string> }> {
  if (postgresBackend && testDatabaseUrl) {
    const database = await createTestDatabase(testDatabaseUrl);
    cleanups.push(() => database.drop());
    return { args: ['--database-url', database.url], env: { ACS_ENCRYPTION_KEY: 'ab'.repeat(32) } };
  }
  const dir = await mkdtemp(join(tmpdir(), 'acs-replies-crash-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return { args: ['--data-dir', join(dir, 'data')], env: {} };
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** One acs-server process at a time on one storage, restartable; calls go with the dev organization's key. */
interface Service {
  url(): string;
  key: Record<string, string>;
  call(method: string, path: string, body?: unknown): Promise<Reply>;
  orgId: string;
  kill(): Promise<void>;
  restart(): Promise<void>;
  output(): string;
}

async function startService(stub: OpenAiStub): Promise<Service> {
  const storage = await storageArgs();
  const dir = await mkdtemp(join(tmpdir(), 'acs-replies-crash-creds-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const credentials = join(dir, 'dev.json');
  const env = { ...storage.env, OPENAI_BASE_URL: `${stub.origin}/v1`, ACS_PROVIDER_TIMEOUT: '20' };
  const args = [...storage.args, '--tick-ms', '50', '--dev-credentials', credentials];
  let server: AcsProcess = await spawnAcsServer(args, env);
  let log = '';
  cleanups.push(async () => {
    server.child.kill('SIGKILL');
    await server.exited;
  });
  const dev = await until('the dev credentials', async () => {
    try {
      return JSON.parse(await readFile(credentials, 'utf8')) as { api_key: string; org_id: string };
    } catch {
      return undefined;
    }
  });
  const key = { 'x-api-key': dev.api_key };
  return {
    url: () => server.url,
    key,
    orgId: dev.org_id,
    call: (method, path, body) => request(server.url + path, method, body, key),
    async kill() {
      log += server.output();
      server.child.kill('SIGKILL');
      await server.exited;
    },
    async restart() {
      server = await spawnAcsServer(args, env);
    },
    output: () => log + server.output(),
  };
}

/** A team of dana and `writer` (openai, no tools), and a thread dana opens with `content`. */
async function writerThread(service: Service, content: string): Promise<{ dana: string; writer: string; thread: string }> {
  const call = service.call;
  expect((await call('PUT', `/api/v1/organizations/${service.orgId}/api-keys/openai`, { api_key: 'sk-crash-test-key' })).status).toBe(200);
  const teamId = (await call('POST', `/api/v1/organizations/${service.orgId}/teams`, { team_name: `crash-${Date.now()}` })).body.team_id;
  const dana = (await call('POST', `/api/v1/teams/${teamId}/humans`, { name: 'dana' })).body.human_id;
  const writer = await call('POST', `/api/v1/teams/${teamId}/agents`, { name: 'writer', provider: 'openai', model: 'stand-in', instructions: 'write' });
  expect(writer.status, JSON.stringify(writer.body)).toBe(201);
  const edge = (await call('POST', `/api/v1/teams/${teamId}/edges`, { participants: [dana, writer.body.agent_id] })).body.edge_id;
  const thread = (await call('POST', `/api/v1/edges/${edge}/threads`, { sender_agent_id: dana, content })).body.thread_id;
  return { dana, writer: writer.body.agent_id, thread };
}

/** What a held stream sent of its text before the hold. */
const sentText = (held: StubRequest) => held.chunks.filter((c) => c.kind === 'text').map((c) => c.text).join('');

/** The text of `senderId`'s deltas since the last `turn.restarted`: what a reader shows of the reply being written. */
function shown(items: readonly Item[], senderId: string): string {
  let text = '';
  for (const item of items) {
    if (item.event === 'turn.restarted' || item.event === 'turn.step') text = '';
    else if (item.event === 'message.delta' && item.data.sender_id === senderId) text += item.data.text;
  }
  return text;
}

const showsText = (reader: ThreadReader, senderId: string, text: string) =>
  reader.until(() => shown(reader.items(), senderId) === text, `the deltas to show ${JSON.stringify(text)}`, 60_000);

const replyOn = async (reader: ThreadReader, senderId: string): Promise<Item> =>
  (await reader.until((i) => i.event === 'message.created' && i.data.sender_id === senderId, 'the reply', 60_000)).find(
    (i) => i.event === 'message.created' && i.data.sender_id === senderId,
  )!;

const text = Array.from({ length: 40 }, (_, i) => `k${i}`).join(' ');

describe(`replies as they are written across a kill -9 of acs-server (${postgresBackend && testDatabaseUrl ? 'PostgreSQL' : 'PGlite data dir'})`, () => {
  let stub: OpenAiStub | undefined;
  afterEach(() => stub?.release());

  it('replies-crash: a reply streaming when acs-server is killed is retried after the restart; the resumed stream says turn.restarted before the new deltas, and only the whole reply is posted', async () => {
    stub = await startOpenAiStub(scriptedToolCompletions(() => paced(text, { size: 'word', delayMs: 0 })));
    cleanups.push(() => stub!.close());
    stub.hold(6);
    const service = await startService(stub);
    const ids = await writerThread(service, 'write');
    const before = await readThread(service.url(), ids.thread, service.key, { after: '0' });
    const first = await stub.held();
    const half = sentText(first);
    expect(half).toBe('k0 k1 k2 k3 k4 k5 ');
    await showsText(before, ids.writer, half);

    await service.kill();
    expect(await first.ended).toEqual({ aborted: true });
    const seen = before.items();
    before.close();
    stub.release();
    await service.restart();
    // The reader reconnects, as an EventSource does, to the new process with the last id it had.
    const after = await readThread(service.url(), ids.thread, service.key, { lastEventId: seen.at(-1)!.id });
    const reply = await replyOn(after, ids.writer);
    const resumed = after.items();
    after.close();

    expect(stub.requests, service.output()).toHaveLength(2);
    expect(reply.data).toMatchObject({ content: text, stopped: false });
    const messageId: string = reply.data.message_id;
    // The first attempt's deltas named the reply's id, fixed before the crash.
    const firstDeltas = deltasOf(seen, messageId);
    expect(firstDeltas.map((d) => d.data.text).join('')).toBe(half);
    // The stream says the reply restarted, before any delta of the second attempt.
    const restarted = resumed.findIndex((i) => i.event === 'turn.restarted');
    expect(restarted, describeItems([...seen, ...resumed])).toBeGreaterThan(-1);
    expect(resumed[restarted]!.data).toEqual({ thread_id: ids.thread, message_id: messageId, sender_id: ids.writer });
    expect(resumed.slice(0, restarted).filter((i) => i.event === 'message.delta')).toEqual([]);
    const secondDeltas = deltasOf(resumed.slice(restarted), messageId);
    expect(secondDeltas.map((d) => d.data.text).join('')).toBe(reply.data.content);
    // Indexes go on across the restart: 0, 1, … once each for the reply.
    const indexes = [...firstDeltas, ...secondDeltas].map((d) => d.data.index);
    expect(indexes).toEqual(indexes.map((_, i) => i));
    // Every item once, across both processes.
    const positions = [...seen, ...resumed].map((i) => i.id);
    expect(new Set(positions).size).toBe(positions.length);
    // No half reply: the thread holds dana's message and the whole reply, once.
    const page = await service.call('GET', `/api/v1/threads/${ids.thread}`);
    expect(page.body.messages.map((m: any) => [m.sender_id, m.content, m.stopped])).toEqual([
      [ids.dana, 'write', false],
      [ids.writer, text, false],
    ]);
  });

  it('replies-crash: a stop asked of a reply retried after a kill -9, from a stream resumed on the new process, posts the retry\'s text so far, stopped', async () => {
    stub = await startOpenAiStub(scriptedToolCompletions(() => paced(text, { size: 'word', delayMs: 0 })));
    cleanups.push(() => stub!.close());
    stub.hold(6);
    const service = await startService(stub);
    const ids = await writerThread(service, 'write');
    const before = await readThread(service.url(), ids.thread, service.key, { after: '0' });
    const first = await stub.held();
    await showsText(before, ids.writer, sentText(first));
    await service.kill();
    const seen = before.items();
    before.close();
    // The retry is held too, after 3 words this time.
    stub.hold(3);
    await service.restart();
    const second = await stub.received(2);
    const after = await readThread(service.url(), ids.thread, service.key, { lastEventId: seen.at(-1)!.id });
    await until('the retry to be held', async () => (second.chunks.length === 3 ? true : undefined));
    await showsText(after, ids.writer, 'k0 k1 k2 ');

    const stop = await service.call('POST', `/api/v1/threads/${ids.thread}/stop`);
    expect(stop.body).toEqual({ thread_id: ids.thread, stopping: 1 });
    expect(await second.ended).toEqual({ aborted: true });
    const reply = await replyOn(after, ids.writer);
    after.close();
    expect(reply.data).toMatchObject({ content: 'k0 k1 k2 ', stopped: true });
    const page = await service.call('GET', `/api/v1/threads/${ids.thread}`);
    expect(page.body.messages.map((m: any) => [m.sender_id, m.content, m.stopped])).toEqual([
      [ids.dana, 'write', false],
      [ids.writer, 'k0 k1 k2 ', true],
    ]);
    expect(stub.requests).toHaveLength(2);
  });
});
