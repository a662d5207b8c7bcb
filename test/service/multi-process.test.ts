import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnAcsServer, type AcsProcess } from '../support/acs-process.ts';
import { startOpenAiStub, echoCompletion, type OpenAiStub } from '../support/openai-stub.ts';
import { createTestDatabase, testDatabaseUrl, type TestDatabase } from '../support/postgres.ts';
import { request, type Reply } from './helpers.ts';

// Two acs-server processes (the real binary) on one fresh PostgreSQL database.
const title = testDatabaseUrl
  ? 'multi-process'
  : 'multi-process (skipped: ACS_TEST_DATABASE_URL is not set; these tests need a PostgreSQL server)';

type Process = AcsProcess;

// One encryption key for both, as operators must configure it: stored responses of
// Idempotency-Key requests are sealed by one process and opened by the other.
const encryptionKey = randomBytes(32).toString('hex');

function spawnServer(databaseUrl: string, dataDir: string, extra: string[], env: Record<string, string> = {}): Promise<Process> {
  return spawnAcsServer(['--database-url', databaseUrl, '--data-dir', dataDir, '--tick-ms', '50', ...extra], { ACS_ENCRYPTION_KEY: encryptionKey, ...env });
}

describe.skipIf(!testDatabaseUrl)(title, () => {
  let database: TestDatabase;
  let dir: string;
  let a: Process;
  let b: Process;
  let orgId: string;
  let headers: Record<string, string>;
  // An OpenAI-compatible model server on loopback; each process reaches it under its own path, so
  // the test can tell who called.
  let stub: OpenAiStub;

  const at = (p: Process, method: string, path: string, body?: unknown, extra: Record<string, string> = {}): Promise<Reply> =>
    request(`${p.url}/api/v1${path}`, method, body, { ...headers, ...extra });

  /** A team with two humans joined by an edge (no agent, so no automatic replies), made through A. */
  async function twoHumans(): Promise<{ ann: string; bob: string; edgeId: string }> {
    const team = await at(a, 'POST', `/organizations/${orgId}/teams`, { team_name: `team-${Math.random()}` });
    const ann = await at(a, 'POST', `/teams/${team.body.team_id}/humans`, { name: 'ann' });
    const bob = await at(a, 'POST', `/teams/${team.body.team_id}/humans`, { name: 'bob' });
    const edge = await at(a, 'POST', `/teams/${team.body.team_id}/edges`, { participants: [ann.body.human_id, bob.body.human_id] });
    expect(edge.status).toBe(201);
    return { ann: ann.body.human_id, bob: bob.body.human_id, edgeId: edge.body.edge_id };
  }

  beforeAll(async () => {
    database = await createTestDatabase(testDatabaseUrl!);
    dir = await mkdtemp(join(tmpdir(), 'acs-multi-'));
    const file = join(dir, 'dev.json');
    stub = await startOpenAiStub(async (request) => {
      // A little latency, so that calls of both processes overlap.
      await new Promise((r) => setTimeout(r, 10));
      return echoCompletion(request);
    });
    // Both start together: migrations are serialised by the advisory lock.
    [a, b] = await Promise.all([
      spawnServer(database.url, dir, ['--dev-credentials', file], { OPENAI_BASE_URL: `${stub.origin}/a/v1` }),
      spawnServer(database.url, dir, [], { OPENAI_BASE_URL: `${stub.origin}/b/v1` }),
    ]);
    const credentials = JSON.parse(await readFile(file, 'utf8'));
    orgId = credentials.org_id;
    headers = { 'x-api-key': credentials.api_key };
  });

  afterAll(async () => {
    await Promise.all(
      [a, b].map(async (p) => {
        if (!p) return;
        p.child.kill('SIGTERM');
        // A server that does not stop must not outlive the test run.
        const timer = setTimeout(() => p.child.kill('SIGKILL'), 10_000);
        expect(await p.exited).toBe(0);
        clearTimeout(timer);
      }),
    );
    await database?.drop();
    await stub?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('multi-process: a long poll held on one process is released by an append through the other', async () => {
    const { ann, bob, edgeId } = await twoHumans();
    const thread = await at(a, 'POST', `/edges/${edgeId}/threads`, { sender_agent_id: ann, content: 'hello' });
    const first = await at(a, 'GET', `/threads/${thread.body.thread_id}`);
    const held = at(a, 'GET', `/threads/${thread.body.thread_id}?after=${first.body.messages[0].message_id}&wait=30`);
    // Give the poll time to be held on A before B appends (if not, it still answers correctly).
    await new Promise((r) => setTimeout(r, 300));
    const appended = await at(b, 'POST', `/threads/${thread.body.thread_id}/messages`, { sender_agent_id: bob, content: 'from B' });
    expect(appended.status).toBe(201);
    // Without a cross-process wake, A would answer only when the 30 s wait ran out.
    const outcome = await Promise.race([held, new Promise<'still held'>((r) => setTimeout(() => r('still held'), 15_000))]);
    expect(outcome).not.toBe('still held');
    expect((outcome as Reply).body.messages.map((m: { message_id: string }) => m.message_id)).toEqual([appended.body.message_id]);
  });

  it('multi-process: concurrent creations of one team name through both processes give one 201 and the rest 409 conflict', async () => {
    const name = `contested-${Math.random()}`;
    const replies = await Promise.all(
      Array.from({ length: 16 }, (_, i) => at(i % 2 === 0 ? a : b, 'POST', `/organizations/${orgId}/teams`, { team_name: name })),
    );
    const created = replies.filter((r) => r.status === 201);
    expect(created).toHaveLength(1);
    const rest = replies.filter((r) => r.status !== 201);
    expect(rest.map((r) => [r.status, r.body.code])).toEqual(rest.map(() => [409, 'conflict']));
    expect(rest.map((r) => r.body.existing_id)).toEqual(rest.map(() => created[0]!.body.team_id));
  });

  it('multi-process: messages appended concurrently through both processes get one gap-free order that after follows', async () => {
    const { ann, bob, edgeId } = await twoHumans();
    const thread = await at(a, 'POST', `/edges/${edgeId}/threads`, { sender_agent_id: ann, content: 'm-0' });
    const threadId = thread.body.thread_id as string;
    const sent = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        at(i % 2 === 0 ? a : b, 'POST', `/threads/${threadId}/messages`, { sender_agent_id: i % 3 === 0 ? ann : bob, content: `m-${i + 1}` }),
      ),
    );
    expect(sent.map((r) => r.status)).toEqual(sent.map(() => 201));

    // Page through with small pages, alternating processes: every message once, and both
    // processes agree on the order.
    async function walk(order: Process[]): Promise<string[]> {
      const ids: string[] = [];
      let after: string | null = null;
      for (let page = 0; page < 100; page += 1) {
        const p = order[page % order.length]!;
        const reply: Reply = await at(p, 'GET', `/threads/${threadId}?limit=7${after ? `&after=${after}` : ''}`);
        ids.push(...reply.body.messages.map((m: { message_id: string }) => m.message_id));
        after = reply.body.next_after;
        if (!reply.body.has_more) return ids;
      }
      throw new Error('paging did not end');
    }
    const viaBoth = await walk([a, b]);
    const viaB = await walk([b]);
    expect(viaBoth).toHaveLength(41);
    expect(new Set(viaBoth).size).toBe(41);
    expect(viaB).toEqual(viaBoth);
    // The opening message comes first; the 40 concurrent appends follow, each exactly once.
    expect(new Set(viaBoth.slice(1))).toEqual(new Set(sent.map((r) => r.body.message_id)));
    const final = await at(b, 'GET', `/threads/${threadId}?limit=1`);
    expect(final.body.message_count).toBe(41);
    // Resuming after any message yields exactly the messages that follow it in that order.
    const middle = viaBoth[20]!;
    const rest = await at(a, 'GET', `/threads/${threadId}?after=${middle}&limit=200`);
    expect(rest.body.messages.map((m: { message_id: string }) => m.message_id)).toEqual(viaBoth.slice(21));
  });

  it('multi-process: a key revoked through one process cannot append through the other at once, and is refused there within the key cache TTL', async () => {
    const { ann, bob, edgeId } = await twoHumans();
    const created = await at(a, 'POST', `/organizations/${orgId}/keys`, { name: 'revoked-elsewhere' });
    const doomed = { 'x-api-key': created.body.api_key as string };
    const thread = await at(b, 'POST', `/edges/${edgeId}/threads`, { sender_agent_id: ann, content: 'open' }, doomed);
    expect(thread.status).toBe(201);
    // B has now authenticated the key and keeps it in its cache.
    expect((await at(b, 'GET', '/organizations', undefined, doomed)).status).toBe(200);
    expect((await at(a, 'DELETE', `/organizations/${orgId}/keys/${created.body.key_id}`)).status).toBe(200);

    const append = await at(b, 'POST', `/threads/${thread.body.thread_id}/messages`, { sender_agent_id: bob, content: 'late' }, doomed);
    expect([append.status, append.body.code]).toEqual([401, 'invalid_api_key']);
    expect((await at(a, 'GET', `/threads/${thread.body.thread_id}`)).body.message_count).toBe(1);
    // Other routes on B: refused once B's cache entry runs out (5 s); poll with a bound.
    let read = await at(b, 'GET', '/organizations', undefined, doomed);
    for (let i = 0; i < 100 && read.status === 200; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      read = await at(b, 'GET', '/organizations', undefined, doomed);
    }
    expect([read.status, read.body.code]).toEqual([401, 'invalid_api_key']);
  });

  it('multi-process: identical POSTs with one Idempotency-Key sent in parallel to both processes create one resource', async () => {
    const name = `idempotent-${Math.random()}`;
    const key = { 'idempotency-key': `multi-${Math.random()}` };
    const replies = await Promise.all(
      Array.from({ length: 8 }, (_, i) => at(i % 2 === 0 ? a : b, 'POST', `/organizations/${orgId}/teams`, { team_name: name }, key)),
    );
    const created = replies.filter((r) => r.status === 201);
    const inUse = replies.filter((r) => r.status !== 201);
    expect(inUse.map((r) => [r.status, r.body.code])).toEqual(inUse.map(() => [409, 'idempotency_key_in_use']));
    expect(created.filter((r) => r.headers.get('idempotent-replayed') !== 'true')).toHaveLength(1);
    const teamId = created.find((r) => r.headers.get('idempotent-replayed') !== 'true')!.body.team_id;
    // Once settled, a retry through either process replays the one response.
    for (const p of [a, b]) {
      const retry = await at(p, 'POST', `/organizations/${orgId}/teams`, { team_name: name }, key);
      expect([retry.status, retry.headers.get('idempotent-replayed'), retry.body.team_id]).toEqual([201, 'true', teamId]);
    }
    const teams = await at(b, 'GET', `/organizations/${orgId}/teams`);
    expect(teams.body.teams.filter((t: { team_name: string }) => t.team_name === name)).toHaveLength(1);
  });

  it('multi-process: an openai agent served by both processes answers 200 incoming messages with exactly 200 provider calls and 200 replies', async () => {
    const team = await at(a, 'POST', `/organizations/${orgId}/teams`, { team_name: `agents-${Math.random()}` });
    const teamId: string = team.body.team_id;
    const bot = await at(a, 'POST', `/teams/${teamId}/agents`, { name: 'bot', provider: 'openai', model: 'local-llama' });
    const ann = await at(b, 'POST', `/teams/${teamId}/humans`, { name: 'ann' });
    const edge = await at(a, 'POST', `/teams/${teamId}/edges`, { participants: [ann.body.human_id, bot.body.agent_id] });
    expect((await at(b, 'PUT', `/organizations/${orgId}/api-keys/openai`, { api_key: 'sk-shared-0001' })).status).toBe(200);

    // 40 threads of 5 messages each, written through both processes while their loops run.
    const threads = 40;
    const perThread = 5;
    const threadIds = await Promise.all(
      Array.from({ length: threads }, async (_, t) => {
        const p = t % 2 === 0 ? a : b;
        const thread = await at(p, 'POST', `/edges/${edge.body.edge_id}/threads`, { sender_agent_id: ann.body.human_id, content: `t${t}-m0` });
        for (let m = 1; m < perThread; m += 1) {
          const sent = await at(m % 2 === 0 ? a : b, 'POST', `/threads/${thread.body.thread_id}/messages`, { sender_agent_id: ann.body.human_id, content: `t${t}-m${m}` });
          expect(sent.status).toBe(201);
        }
        return thread.body.thread_id as string;
      }),
    );

    const total = threads * perThread;
    await stub.received(total);
    const deadline = Date.now() + 60_000;
    const repliesOf = async (threadId: string) =>
      ((await at(a, 'GET', `/threads/${threadId}?limit=200`)).body.messages as Array<{ sender_id: string; content: string }>).filter((m) => m.sender_id === bot.body.agent_id);
    let replies = 0;
    while (Date.now() < deadline) {
      replies = (await Promise.all(threadIds.map(repliesOf))).reduce((sum, list) => sum + list.length, 0);
      if (replies >= total) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    // Several ticks of both loops later, nothing more was asked or posted.
    await new Promise((r) => setTimeout(r, 1000));
    const calls = stub.requests.filter((r) => r.body.model === 'local-llama');
    expect(calls).toHaveLength(total);
    const answered = calls.map((r) => r.body.messages.filter((m) => m.role === 'user').at(-1)!.content);
    expect(new Set(answered).size).toBe(total);
    for (const [t, threadId] of threadIds.entries()) {
      const contents = (await repliesOf(threadId)).map((m) => m.content);
      expect(contents).toEqual(Array.from({ length: perThread }, (_, m) => `reply to: t${t}-m${m}`));
    }
    // Both processes took part (each reaches the stub under its own path).
    const byProcess = { a: calls.filter((r) => r.path.startsWith('/a/')).length, b: calls.filter((r) => r.path.startsWith('/b/')).length };
    expect(byProcess.a + byProcess.b).toBe(total);
    console.log(`multi-process agent loop: calls by process A ${byProcess.a}, B ${byProcess.b}`);
  });
});

// Contract §14 across processes: the per-organization bound of held waits is counted by each
// process (docs/operating-acs-server.md, "Events, webhooks and held waits"): an organization
// holds at most its bound in each process, and another organization's waits are held in every
// process while the first is at its bound in all of them.
describe.skipIf(!testDatabaseUrl)(`${title}: held waits per organization`, () => {
  const perOrg = 2;
  let database: TestDatabase;
  let dir: string;
  let a: Process;
  let b: Process;
  let alpha: { orgId: string; key: string };
  let beta: { orgId: string; key: string };
  const streams: AbortController[] = [];

  /** Opens the organization's event stream on `p` with `key`; resolves with its status (and problem) once the headers (or the refusal) arrive. */
  async function stream(p: Process, org: { orgId: string; key: string }): Promise<{ status: number; body?: any }> {
    const controller = new AbortController();
    streams.push(controller);
    const response = await fetch(`${p.url}/api/v1/organizations/${org.orgId}/events/stream`, { headers: { 'x-api-key': org.key }, signal: controller.signal });
    return response.status === 200 ? { status: 200 } : { status: response.status, body: await response.json() };
  }

  beforeAll(async () => {
    database = await createTestDatabase(testDatabaseUrl!);
    dir = await mkdtemp(join(tmpdir(), 'acs-multi-waits-'));
    const file = join(dir, 'dev.json');
    const flags = ['--max-held-waits-per-org', String(perOrg), '--max-held-waits-per-key', '10', '--max-held-waits', '100', '--rate-limit', '100000'];
    [a, b] = await Promise.all([spawnServer(database.url, dir, [...flags, '--dev-credentials', file]), spawnServer(database.url, dir, flags)]);
    const credentials = JSON.parse(await readFile(file, 'utf8'));
    alpha = { orgId: credentials.org_id, key: credentials.api_key };
    // Beta: an organization alpha provisioned, with a key of its own (its waits count toward beta).
    const created = await request(`${a.url}/api/v1/organizations`, 'POST', { org_name: 'beta' }, { 'x-api-key': alpha.key });
    const betaKey = await request(`${a.url}/api/v1/organizations/${created.body.org_id}/keys`, 'POST', { name: 'beta' }, { 'x-api-key': alpha.key });
    beta = { orgId: created.body.org_id, key: betaKey.body.api_key };
  });

  afterAll(async () => {
    for (const controller of streams) controller.abort();
    await Promise.all(
      [a, b].map(async (p) => {
        if (!p) return;
        p.child.kill('SIGTERM');
        const timer = setTimeout(() => p.child.kill('SIGKILL'), 10_000);
        expect(await p.exited).toBe(0);
        clearTimeout(timer);
      }),
    );
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('multi-process: with one organization at its bound of held waits in both processes (the bound is per process), another organization\'s streams and long polls are held in both', async () => {
    // Alpha fills its bound in A, is refused there, and holds its bound in B too.
    for (const p of [a, b]) {
      const held = [await stream(p, alpha), await stream(p, alpha)];
      expect(held.map((s) => s.status)).toEqual([200, 200]);
      const refused = await stream(p, alpha);
      expect([refused.status, refused.body?.code]).toEqual([429, 'too_many_waits']);
      expect(refused.body.detail).toMatch(/this organization already holds 2 waiting requests on this server/);
    }
    // Beta still waits in both processes: a stream in each, and a long poll held by A that an
    // append through B answers.
    expect([(await stream(a, beta)).status, (await stream(b, beta)).status]).toEqual([200, 200]);
    const asBeta = (p: Process, method: string, path: string, body?: unknown) => request(`${p.url}/api/v1${path}`, method, body, { 'x-api-key': beta.key });
    const team = (await asBeta(a, 'POST', `/organizations/${beta.orgId}/teams`, { team_name: 'waits' })).body.team_id;
    const [ann, bob] = [(await asBeta(a, 'POST', `/teams/${team}/humans`, { name: 'ann' })).body.human_id, (await asBeta(a, 'POST', `/teams/${team}/humans`, { name: 'bob' })).body.human_id];
    const edge = (await asBeta(a, 'POST', `/teams/${team}/edges`, { participants: [ann, bob] })).body.edge_id;
    const thread = (await asBeta(a, 'POST', `/edges/${edge}/threads`, { sender_agent_id: ann, content: 'hello' })).body;
    const first = (await asBeta(a, 'GET', `/threads/${thread.thread_id}`)).body.messages[0].message_id;
    const poll = asBeta(a, 'GET', `/threads/${thread.thread_id}?after=${first}&wait=25`);
    const appended = await asBeta(b, 'POST', `/threads/${thread.thread_id}/messages`, { sender_agent_id: bob, content: 'through B' });
    expect(appended.status).toBe(201);
    const answered = await poll;
    expect(answered.status).toBe(200);
    expect(answered.body.messages.map((m: { content: string }) => m.content)).toEqual(['through B']);
  });
});
