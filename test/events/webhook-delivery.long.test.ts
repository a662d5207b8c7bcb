import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { createTestDatabase, testDatabaseUrl } from '../support/postgres.ts';
import { startReceiver } from '../support/webhook-receiver.ts';
import { request } from '../service/helpers.ts';

// Contract §9: "pending deliveries survive restarts" and "several processes on one database
// attempt each delivery once", with the real binary: killed with SIGKILL while deliveries wait for
// their retries, then started again on the same storage; and two processes on one PostgreSQL.

const root = join(import.meta.dirname, '../..');
const encryptionKey = randomBytes(32).toString('hex');

interface Server {
  child: ChildProcess;
  url: string;
  exited: Promise<number | null>;
  apiKey: string;
  orgId: string;
}

/** Starts `acs-server start` with `args` and resolves once it listens, with the dev credentials it wrote. */
async function spawnServer(args: string[], credentials: string): Promise<Server> {
  const child = spawn(
    join(root, 'node_modules/.bin/node'),
    ['bin/acs-server.ts', 'start', '--port', '0', '--webhook-allow-private', '--dev-credentials', credentials, ...args],
    { cwd: root, env: { ...process.env, ACS_ENCRYPTION_KEY: encryptionKey, ACS_AGENT_PROVIDERS: 'echo' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /acs-server listening on (http:\/\/\S+)/.exec(out);
      if (match) resolve(match[1]!);
    });
    child.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('exit', (code) => reject(new Error(`acs-server exited with ${code} before listening: ${out}`)));
  });
  const creds = await until(
    async () => JSON.parse(await readFile(credentials, 'utf8').catch(() => '{}')) as { base_url?: string; api_key?: string; org_id?: string },
    (c) => c.base_url === url,
    'the credentials file',
  );
  return { child, url, exited, apiKey: creds.api_key!, orgId: creds.org_id! };
}

let cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step().catch(() => {});
  cleanup = [];
});

async function stop(server: Server, signal: NodeJS.Signals): Promise<void> {
  if (server.child.exitCode === null) server.child.kill(signal);
  await server.exited;
}

/** Polls `read` until `done` holds (90 s at most). */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: never happened; last: ${JSON.stringify(value).slice(0, 2000)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const call = (server: Server, method: string, path: string, body?: unknown) => request(`${server.url}/api/v1${path}`, method, body, { 'x-api-key': server.apiKey });

/**
 * 40 events for a receiver that answers 503; the server SIGKILLed once every delivery has failed
 * at least once (all pending, waiting for a retry); the receiver recovered; the server started
 * again on the same storage (`storage` flags): every event is delivered, each verified with the
 * webhook's secret by the standardwebhooks library, and the delivery log says delivered for all.
 */
async function killedWithPendingDeliveries(storage: string[]): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'acs-webhooks-'));
  cleanup.push(() => rm(dir, { recursive: true, force: true }));
  const credentials = join(dir, 'dev.json');
  const receiver = await startReceiver();
  cleanup.push(() => receiver.close());
  receiver.answer(() => ({ status: 503 }));
  const flags = [...storage, '--webhook-retry-schedule', '2s,2s,2s,2s,2s,2s,2s,2s'];
  const first = await spawnServer(flags, credentials);
  cleanup.push(() => stop(first, 'SIGKILL'));
  const hook = (await call(first, 'POST', `/organizations/${first.orgId}/webhooks`, { url: receiver.url, events: ['team.created'] })).body;
  const teams = 40;
  for (let i = 0; i < teams; i += 1) expect((await call(first, 'POST', `/organizations/${first.orgId}/teams`, { team_name: `t${i}` })).status).toBe(201);
  await until(
    async () => (await call(first, 'GET', `/webhooks/${hook.webhook_id}/deliveries?limit=200`)).body.deliveries as any[],
    (list) => list.length === teams && list.every((d) => d.status === 'pending' && d.attempt >= 1 && d.response_status === 503),
    'every delivery failed once and pending',
  );
  await stop(first, 'SIGKILL');
  const refused = receiver.received.length;
  receiver.answer(() => ({ status: 200 }));

  const second = await spawnServer(flags, credentials);
  cleanup.push(() => stop(second, 'SIGTERM'));
  const delivered = await until(
    async () => (await call(second, 'GET', `/webhooks/${hook.webhook_id}/deliveries?limit=200`)).body.deliveries as any[],
    (list) => list.length === teams && list.every((d) => d.status === 'delivered'),
    'every delivery delivered after the restart',
  );
  expect(delivered.every((d) => d.response_status === 200)).toBe(true);
  // The log lists every attempt, across the kill: the refused ones (503), any the killed process
  // had in flight (no outcome recorded), and the one that got through.
  for (const d of delivered) {
    expect(d.attempts.map((a: any) => a.attempt)).toEqual(Array.from({ length: d.attempt }, (_, i) => i + 1));
    expect(d.attempts.at(-1)).toMatchObject({ status: 'delivered', response_status: 200, error: null });
    for (const earlier of d.attempts.slice(0, -1)) {
      expect(earlier.status).toBe('pending');
      expect([earlier.response_status, earlier.error]).toSatisfy(
        ([status, error]: [number | null, string | null]) => status === 503 || (status === null && error!.startsWith('no outcome recorded: the process making this attempt stopped')),
      );
    }
  }
  const accepted = receiver.received.slice(refused);
  const names = new Set(accepted.map((r) => new StandardWebhook(hook.secret).verify(r.body, r.headers as Record<string, string>)).map((e: any) => e.data.team_name));
  expect(names).toEqual(new Set(Array.from({ length: teams }, (_, i) => `t${i}`)));
  // The same event id on the refused attempts and on the one that got through.
  const ids = new Set(receiver.received.map((r) => r.headers['webhook-id']));
  expect(ids.size).toBe(teams);
}

describe('webhook deliveries across restarts and processes', () => {
  it('kill -9 (PGlite on a data dir): deliveries pending when the server is SIGKILLed are all delivered after it starts again', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'acs-data-'));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    await killedWithPendingDeliveries(['--data-dir', dir]);
  });

  it.skipIf(!testDatabaseUrl)('kill -9 (PostgreSQL): deliveries pending when the server is SIGKILLed are all delivered after it starts again', async () => {
    const database = await createTestDatabase(testDatabaseUrl!);
    cleanup.push(() => database.drop());
    await killedWithPendingDeliveries(['--database-url', database.url]);
  });

  it.skipIf(!testDatabaseUrl)('two processes on one PostgreSQL: 100 events, each delivered once (one attempt each), whichever process wrote it', async () => {
    const database = await createTestDatabase(testDatabaseUrl!);
    cleanup.push(() => database.drop());
    const dir = await mkdtemp(join(tmpdir(), 'acs-webhooks-'));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    const receiver = await startReceiver();
    cleanup.push(() => receiver.close());
    const flags = ['--database-url', database.url];
    const a = await spawnServer(flags, join(dir, 'a.json'));
    cleanup.push(() => stop(a, 'SIGTERM'));
    const b = await spawnServer(flags, join(dir, 'b.json'));
    cleanup.push(() => stop(b, 'SIGTERM'));
    expect(b.orgId).toBe(a.orgId);
    const hook = (await call(a, 'POST', `/organizations/${a.orgId}/webhooks`, { url: receiver.url, events: ['team.*'] })).body;
    const teams = 100;
    await Promise.all(
      Array.from({ length: teams }, (_, i) => call(i % 2 ? a : b, 'POST', `/organizations/${a.orgId}/teams`, { team_name: `t${i}` }).then((r) => expect(r.status).toBe(201))),
    );
    const delivered = await until(
      async () => (await call(b, 'GET', `/webhooks/${hook.webhook_id}/deliveries?limit=200`)).body.deliveries as any[],
      (list) => list.length === teams && list.every((d) => d.status === 'delivered'),
      'every delivery delivered',
    );
    expect(delivered.every((d) => d.attempt === 1)).toBe(true);
    expect(receiver.received).toHaveLength(teams);
    expect(new Set(receiver.received.map((r) => r.headers['webhook-id'])).size).toBe(teams);
  });
});
