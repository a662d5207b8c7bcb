// Contract §13 across processes: two acs-server processes (the real binary) on one PostgreSQL
// database. Process A writes a provider agent's replies (B's agent loop ticks once an hour: it
// claims no work during the test); a reader on B sees them as they are written, and a reader that drops
// and resumes with Last-Event-ID at 20 random points, alternately on A and on B, gets every item
// once — what a reader on B that never dropped got. Needs PostgreSQL (skipped without it).
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnAcsServer, type AcsProcess } from '../support/acs-process.ts';
import { paced } from '../support/model-script.ts';
import { scriptedToolCompletions, startOpenAiStub, type OpenAiStub } from '../support/openai-stub.ts';
import { createTestDatabase, testDatabaseUrl, type TestDatabase } from '../support/postgres.ts';
import { request, type Reply } from './helpers.ts';
import { deltasOf, describe as describeItems, droppingReader, readThread, rebuiltText, seededRandom, type Item } from './stream-helpers.ts';

const title = testDatabaseUrl
  ? 'thread stream across two processes on one PostgreSQL'
  : 'thread stream across two processes (skipped: ACS_TEST_DATABASE_URL is not set; these tests need a PostgreSQL server)';

const encryptionKey = randomBytes(32).toString('hex');
const words = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}${i}`).join(' ');

describe.skipIf(!testDatabaseUrl)(title, () => {
  let database: TestDatabase;
  let dir: string;
  let a: AcsProcess;
  let b: AcsProcess;
  let stub: OpenAiStub;
  let orgId: string;
  let key: Record<string, string>;
  const texts = new Map<string, string>([
    ['live', words(40, 'l')],
    ['one', words(50, 'x')],
    ['two', words(50, 'y')],
    ['three', words(50, 'z')],
  ]);

  const at = (p: AcsProcess, method: string, path: string, body?: unknown): Promise<Reply> => request(`${p.url}/api/v1${path}`, method, body, key);

  beforeAll(async () => {
    database = await createTestDatabase(testDatabaseUrl!);
    dir = await mkdtemp(join(tmpdir(), 'acs-stream-processes-'));
    stub = await startOpenAiStub(scriptedToolCompletions((c) => {
      const text = texts.get(c.lastUserText ?? '');
      return text === undefined ? 'ready' : paced(text, { size: 'word', delayMs: 12 });
    }));
    const credentials = join(dir, 'dev.json');
    const common = ['--database-url', database.url, '--data-dir', dir];
    [a, b] = await Promise.all([
      spawnAcsServer([...common, '--tick-ms', '50', '--dev-credentials', credentials], { ACS_ENCRYPTION_KEY: encryptionKey, OPENAI_BASE_URL: `${stub.origin}/a/v1` }),
      spawnAcsServer([...common, '--tick-ms', '3600000'], { ACS_ENCRYPTION_KEY: encryptionKey, OPENAI_BASE_URL: `${stub.origin}/b/v1` }),
    ]);
    const dev = JSON.parse(await readFile(credentials, 'utf8'));
    orgId = dev.org_id;
    key = { 'x-api-key': dev.api_key };
    expect((await at(a, 'PUT', `/organizations/${orgId}/api-keys/openai`, { api_key: 'sk-processes' })).status).toBe(200);
  });

  afterAll(async () => {
    await Promise.all(
      [a, b].map(async (p) => {
        if (!p) return;
        p.child.kill('SIGTERM');
        const timer = setTimeout(() => p.child.kill('SIGKILL'), 10_000);
        await p.exited;
        clearTimeout(timer);
      }),
    );
    await database?.drop();
    await stub?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** A team of dana and `writer` (openai, no tools), made through A, and a thread dana opens with 'hello', answered. */
  async function writerThread(): Promise<{ dana: string; writer: string; thread: string }> {
    const team = (await at(a, 'POST', `/organizations/${orgId}/teams`, { team_name: `t-${randomBytes(4).toString('hex')}` })).body.team_id;
    const dana = (await at(a, 'POST', `/teams/${team}/humans`, { name: 'dana' })).body.human_id;
    const writer = await at(a, 'POST', `/teams/${team}/agents`, { name: 'writer', provider: 'openai', model: 'stand-in', instructions: 'write' });
    expect(writer.status, JSON.stringify(writer.body)).toBe(201);
    const edge = (await at(a, 'POST', `/teams/${team}/edges`, { participants: [dana, writer.body.agent_id] })).body.edge_id;
    const thread = (await at(a, 'POST', `/edges/${edge}/threads`, { sender_agent_id: dana, content: 'hello' })).body.thread_id;
    const first = await readThread(b.url, thread, key, { after: '0' });
    await first.until((i) => i.event === 'message.created' && i.data.sender_id === writer.body.agent_id, 'the first answer', 60_000);
    first.close();
    return { dana, writer: writer.body.agent_id, thread };
  }

  it('thread stream across processes: a reader on B sees a reply written by A as it is written (deltas while A\'s model is held half-way), ordered before its message.created, joined equal to it', async () => {
    const ids = await writerThread();
    const reader = await readThread(b.url, ids.thread, key);
    stub.hold(5);
    try {
      expect((await at(b, 'POST', `/threads/${ids.thread}/messages`, { sender_agent_id: ids.dana, content: 'live' })).status).toBe(201);
      const held = await stub.held();
      // Nothing is posted while A's model is held: B shows the deltas A wrote, told by A's signal.
      const half = held.chunks.map((c) => c.text).join('');
      await reader.until(() => reader.items().filter((i) => i.event === 'message.delta').map((i) => i.data.text).join('') === half, 'the held half of the reply', 60_000);
    } finally {
      stub.release();
    }
    const items = await reader.until((i) => i.event === 'message.created' && i.data.sender_id === ids.writer, 'the reply', 60_000);
    reader.close();
    const reply = items.find((i) => i.event === 'message.created' && i.data.sender_id === ids.writer)!;
    expect(reply.data.content).toBe(texts.get('live'));
    const deltas = deltasOf(items, reply.data.message_id);
    expect(deltas.length, describeItems(items)).toBeGreaterThan(1);
    expect(deltas.map((d) => d.data.index)).toEqual(deltas.map((_, i) => i));
    expect(items.findLastIndex((i) => i.event === 'message.delta')).toBeLessThan(items.indexOf(reply));
    expect(deltas.map((d) => d.data.text).join('')).toBe(reply.data.content);
    // A wrote it: every model request went through A's base URL.
    expect(stub.requests.map((r) => r.path.split('/')[1])).toEqual(stub.requests.map(() => 'a'));
  });

  it('thread stream across processes: a stop asked through B ends the reply A is writing: A\'s model request is aborted and the text so far is posted, stopped', async () => {
    const ids = await writerThread();
    const reader = await readThread(b.url, ids.thread, key);
    stub.hold(4);
    try {
      expect((await at(b, 'POST', `/threads/${ids.thread}/messages`, { sender_agent_id: ids.dana, content: 'live' })).status).toBe(201);
      const held = await stub.held();
      const half = held.chunks.map((c) => c.text).join('');
      await reader.until(() => reader.items().filter((i) => i.event === 'message.delta').map((i) => i.data.text).join('') === half, 'the held half of the reply', 60_000);
      const stop = await at(b, 'POST', `/threads/${ids.thread}/stop`);
      expect(stop.body).toEqual({ thread_id: ids.thread, stopping: 1 });
      expect(await held.ended).toEqual({ aborted: true });
      const items = await reader.until((i) => i.event === 'message.created' && i.data.sender_id === ids.writer, 'the stopped reply', 60_000);
      reader.close();
      expect(items.find((i) => i.event === 'message.created' && i.data.sender_id === ids.writer)!.data).toMatchObject({ content: half, stopped: true });
    } finally {
      stub.release();
    }
  });

  it('thread stream across processes: a reader resuming with Last-Event-ID at 20 random points, alternately on A and B, gets every item once, as a reader on B that never dropped', async () => {
    const ids = await writerThread();
    const from = String((await at(a, 'GET', `/threads/${ids.thread}`)).body.messages.length);
    const isDone = (items: readonly Item[]) => items.filter((i) => i.event === 'message.created' && i.data.sender_id === ids.writer).length === 3;
    const steady = await readThread(b.url, ids.thread, key, { lastEventId: from });
    const seed = Number(process.env.STREAM_SEED ?? Date.now() % 1_000_000);
    const dropping = droppingReader({
      from,
      drops: 20,
      random: seededRandom(seed),
      minMs: 20,
      maxMs: 120,
      open: (lastId, attempt) => readThread((attempt % 2 === 0 ? a : b).url, ids.thread, key, { lastEventId: lastId }),
      // The drops begin with the first reply's first delta: they fall while the replies stream.
      begin: (i) => i.event === 'message.delta',
      done: isDone,
      timeoutMs: 90_000,
    });
    for (const content of ['one', 'two', 'three']) {
      expect((await at(a, 'POST', `/threads/${ids.thread}/messages`, { sender_agent_id: ids.dana, content })).status).toBe(201);
    }
    const reference = await steady.until(() => isDone(steady.items()), 'the third reply', 90_000);
    steady.close();
    const dropped = await dropping;

    const replies = reference.filter((i) => i.event === 'message.created' && i.data.sender_id === ids.writer);
    expect(replies.map((r) => r.data.content)).toEqual(['one', 'two', 'three'].map((k) => texts.get(k)));
    expect(dropped.resumedFrom).toHaveLength(21);
    expect(new Set(dropped.items.map((i) => i.id)).size, `seed ${seed}: repeated items`).toBe(dropped.items.length);
    expect(dropped.items, `seed ${seed}`).toEqual(reference);
    for (const reply of replies) expect(rebuiltText(dropped.items, reply.data.message_id)).toBe(reply.data.content);
    expect(dropped.resumedFrom.filter((id) => id.includes('.')).length, `seed ${seed}: ${dropped.resumedFrom.join(' ')}`).toBeGreaterThan(0);
  });
});
