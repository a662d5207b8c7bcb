import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import { startServer, type RunningServer, type ServerOptions } from '../../service/index.ts';
import type { Db } from '../../service/storage/db.ts';
import { openDb } from '../../service/storage/open-db.ts';
import { createTestDatabase, postgresBackend, testDatabaseUrl, type TestDatabase } from '../support/postgres.ts';

/** A response as the tests look at it. */
export interface Reply {
  status: number;
  headers: Headers;
  body: any;
}

/** A started server plus a key-bound client for it. */
export interface Harness {
  server: RunningServer;
  orgId: string;
  apiKey: string;
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Reply>;
}

/** Calls `url` with JSON in and out; `body` strings are sent as they are. */
export async function request(url: string, method: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) {
      (init.headers as Record<string, string>)['content-type'] = 'application/json';
    }
  }
  const response = await fetch(url, init);
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, headers: response.headers, body: parsed };
}

/**
 * Starts an in-memory server (unless options say otherwise) and provisions one organization.
 * In the vitest `postgres` project (ACS_TEST_BACKEND=postgres) a server that would have been in
 * memory gets a fresh PostgreSQL database instead, dropped again by `server.close()`; servers
 * on a data dir stay on PGlite.
 */
export async function startHarness(options: ServerOptions = { inMemory: true }): Promise<Harness> {
  const server = await startHarnessServer(options);
  const { org_id, api_key } = await server.provisionOrganization('acme');
  return {
    server,
    orgId: org_id,
    apiKey: api_key,
    call: (method, path, body, headers = {}) => request(server.url + path, method, body, { 'x-api-key': api_key, ...headers }),
  };
}

async function startHarnessServer(options: ServerOptions): Promise<RunningServer> {
  const base = { port: 0, tickMs: 20, ...options };
  if (!postgresBackend || options.dataDir !== undefined || options.databaseUrl !== undefined) return startServer(base);
  if (!testDatabaseUrl) throw new Error('ACS_TEST_BACKEND=postgres needs ACS_TEST_DATABASE_URL');
  const database = await createTestDatabase(testDatabaseUrl);
  let server: RunningServer;
  try {
    // A deployment on PostgreSQL has an encryption key of its own (docs/operating-acs-server.md);
    // without one the server warns at start, which tests that read the log would see.
    const env = options.env ?? process.env;
    server = await startServer({ ...base, inMemory: false, databaseUrl: database.url, env: { ...env, ACS_ENCRYPTION_KEY: env.ACS_ENCRYPTION_KEY || randomBytes(32).toString('hex') } });
  } catch (error) {
    await database.drop();
    throw error;
  }
  let closing: Promise<void> | undefined;
  return {
    ...server,
    close() {
      closing ??= server.close().then(() => database.drop());
      return closing;
    },
  };
}

/**
 * {@link startHarness} on storage the test opens itself and shares with the server (in memory, or
 * a fresh PostgreSQL database in the `postgres` project): the test can count rows, or act as
 * another process writing behind the server's back. `setup.wrap` wraps the storage the server
 * gets, `setup.options` are added to the server's. `server.close()` closes it (and drops the
 * database).
 */
export async function startHarnessWithDb<D extends Db = Db>(
  name = 'acme',
  setup: { wrap?: (db: Db) => D; options?: ServerOptions } = {},
): Promise<Harness & { db: D }> {
  let database: TestDatabase | undefined;
  let opened: Db;
  if (postgresBackend) {
    database = await createTestDatabase(testDatabaseUrl!);
    opened = await openDb({ databaseUrl: database.url });
  } else {
    opened = await openDb({ inMemory: true });
  }
  // `wrap` sees every statement the server runs (a counting Db, say).
  const db = (setup.wrap ? setup.wrap(opened) : opened) as D;
  let server: RunningServer;
  try {
    server = await startServer({ db, port: 0, tickMs: 20, ...setup.options });
  } catch (error) {
    await db.close().catch(() => {});
    await database?.drop();
    throw error;
  }
  let closing: Promise<void> | undefined;
  const closable: RunningServer = {
    ...server,
    close() {
      closing ??= server.close().then(async () => database?.drop());
      return closing;
    },
  };
  const { org_id, api_key } = await server.provisionOrganization(name);
  return {
    server: closable,
    db,
    orgId: org_id,
    apiKey: api_key,
    call: (method, path, body, headers = {}) => request(server.url + path, method, body, { 'x-api-key': api_key, ...headers }),
  };
}

/** Creates a team with an agent and a human joined by an edge; returns their ids. */
export async function buildTeam(h: Harness, agent: Record<string, unknown> = {}) {
  const team = await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: `team-${Math.random()}` });
  const bot = await h.call('POST', `/api/v1/teams/${team.body.team_id}/agents`, { name: 'bot', ...agent });
  const ann = await h.call('POST', `/api/v1/teams/${team.body.team_id}/humans`, { name: 'ann' });
  const edge = await h.call('POST', `/api/v1/teams/${team.body.team_id}/edges`, { participants: [ann.body.human_id, bot.body.agent_id] });
  return { teamId: team.body.team_id as string, agentId: bot.body.agent_id as string, humanId: ann.body.human_id as string, edgeId: edge.body.edge_id as string };
}

/** A message as the thread page returns it. */
export interface Msg {
  message_id: string;
  sender_id: string;
  content: string;
}

/** Long-polls the thread until `done(messages)` holds for all its messages; gives up after `timeoutMs` (default 30 s). */
export async function waitForThread(h: Pick<Harness, 'call'>, threadId: string, done: (messages: Msg[]) => boolean, timeoutMs = 30_000): Promise<Msg[]> {
  const messages: Msg[] = [];
  let after: string | null = null;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const query: string = after ? `?after=${after}&wait=5&limit=200` : '?limit=200';
    const page = (await h.call('GET', `/api/v1/threads/${threadId}${query}`)).body;
    messages.push(...page.messages);
    after = page.next_after;
    if (done(messages)) return messages;
  }
  throw new Error(`thread ${threadId} never reached the expected state: ${JSON.stringify(messages.map((m) => m.content))}`);
}

/** The thread's messages now, oldest first (up to 200). */
export async function threadMessages(h: Pick<Harness, 'call'>, threadId: string): Promise<Msg[]> {
  return (await h.call('GET', `/api/v1/threads/${threadId}?limit=200`)).body.messages;
}

/**
 * Resolves once some session of the database waits for a lock in a statement whose text contains
 * `fragment` (PostgreSQL only: PGlite runs one transaction at a time). Gives up after 30 s.
 */
export async function lockWaitSeen(db: Db, fragment: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const rows = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock' AND strpos(query, $1) > 0 AND pid <> pg_backend_pid()`,
      [fragment],
    );
    if (rows[0]!.n > 0) return;
    if (Date.now() > deadline) throw new Error(`no statement containing "${fragment}" waited for a lock within 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Runs `sql` in a transaction of the test's own, as another process would, and holds it (and its
 * row locks) open; resolves once `sql` ran. `release()` commits it and resolves once it ended.
 */
export async function holdLocks(db: Db, sql: string, params: unknown[]): Promise<{ release(): Promise<void> }> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let started!: () => void;
  const running = new Promise<void>((resolve) => (started = resolve));
  const held = db.transaction(async (tx) => {
    await tx.query(sql, params);
    started();
    await released;
  });
  await Promise.race([running, held]);
  return {
    async release() {
      release();
      await held;
    },
  };
}

/** The ids {@link buildTeam} returns. */
export type TeamIds = Awaited<ReturnType<typeof buildTeam>>;

/**
 * Registers, for the enclosing suite, a harness with one team built by {@link buildTeam} before
 * its tests and the server's close after them; `use` receives them once started.
 */
export function withTeamHarness(use: (started: { h: Harness; ids: TeamIds }) => void): void {
  let harness: Harness | undefined;
  beforeAll(async () => {
    harness = await startHarness();
    use({ h: harness, ids: await buildTeam(harness) });
  });
  afterAll(async () => {
    await harness?.server.close();
  });
}
