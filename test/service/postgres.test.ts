import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../service/index.ts';
import { createPgNotifier, EVENTS_CHANNEL, FOLLOWS_CHANNEL, NOTIFIER_APPLICATION_NAME } from '../../service/storage/pg-notifier.ts';
import { openPostgresDb } from '../../service/storage/postgres-db.ts';
import { eventually } from '../support/decide.ts';
import { request } from './helpers.ts';

// Runs against a real PostgreSQL when ACS_TEST_DATABASE_URL names one (any database: the test
// creates and drops its own); skipped otherwise.
const adminUrl = process.env.ACS_TEST_DATABASE_URL;

describe.skipIf(!adminUrl)('postgres storage', () => {
  const dbName = `acs_test_${process.pid}_${Date.now()}`;
  let url: string;
  let servers: RunningServer[] = [];

  beforeAll(async () => {
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${dbName}`);
    await admin.end();
    const parsed = new URL(adminUrl!);
    parsed.pathname = `/${dbName}`;
    url = parsed.toString();
  });

  afterAll(async () => {
    for (const server of servers) await server.close();
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await admin.end();
  });

  it('postgres storage: two servers starting together migrate once and share data', async () => {
    // Processes on one database share the encryption key (docs/operating-acs-server.md): without it,
    // the key one of them stored is one the other cannot decrypt.
    const options = { databaseUrl: url, port: 0, tickMs: 20, env: { ACS_ENCRYPTION_KEY: randomBytes(32).toString('hex') } };
    servers = await Promise.all([startServer(options), startServer(options)]);
    const [one, two] = servers as [RunningServer, RunningServer];
    const { org_id, api_key } = await one.provisionOrganization('pg-org');
    const headers = { 'x-api-key': api_key };
    const team = await request(`${one.url}/api/v1/organizations/${org_id}/teams`, 'POST', { team_name: 'shared' }, headers);
    expect(team.status).toBe(201);
    const seen = await request(`${two.url}/api/v1/teams/${team.body.team_id}`, 'GET', undefined, headers);
    expect(seen.body).toMatchObject({ team_name: 'shared', agent_count: 0, edge_count: 0 });
    const orgs = await request(`${two.url}/api/v1/organizations`, 'GET', undefined, headers);
    expect(orgs.body.organizations[0]).toMatchObject({ team_count: 1, human_count: 1 });
  });

  it('postgres storage: two agent loops on one database answer a message once', async () => {
    const [one, two] = servers as [RunningServer, RunningServer];
    const { org_id, api_key } = await one.provisionOrganization('pg-loop');
    const h = { 'x-api-key': api_key };
    await request(`${one.url}/organizations/${org_id}/api-keys/echo`, 'PUT', { api_key: 'k' }, h);
    const team = await request(`${one.url}/api/v1/organizations/${org_id}/teams`, 'POST', { team_name: 't' }, h);
    const bot = await request(`${one.url}/api/v1/teams/${team.body.team_id}/agents`, 'POST', { name: 'bot', provider: 'echo' }, h);
    const ann = await request(`${one.url}/api/v1/teams/${team.body.team_id}/humans`, 'POST', { name: 'ann' }, h);
    const edge = await request(`${one.url}/api/v1/teams/${team.body.team_id}/edges`, 'POST', { participants: [ann.body.human_id, bot.body.agent_id] }, h);
    const thread = await request(`${two.url}/api/v1/edges/${edge.body.edge_id}/threads`, 'POST', { sender_agent_id: ann.body.human_id, content: 'hi' }, h);
    // Either loop may write the reply, some ticks later: read until it is there.
    const threadUrl = `${one.url}/api/v1/threads/${thread.body.thread_id}`;
    async function until(count: number): Promise<Array<{ content: string; message_id: string }>> {
      for (let i = 0; i < 200; i += 1) {
        const page = (await request(threadUrl, 'GET', undefined, h)).body;
        if (page.messages.length >= count) return page.messages;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error('no reply');
    }
    await until(2);
    await request(`${two.url}/api/v1/threads/${thread.body.thread_id}/messages`, 'POST', { sender_agent_id: ann.body.human_id, content: 'again' }, h);
    const messages = await until(4);
    expect(messages.map((m) => m.content)).toEqual(['hi', 'echo: hi', 'again', 'echo: again']);
    // Both loops keep ticking; a held poll re-reads after a second and still finds nothing new.
    const later = await request(`${threadUrl}?after=${messages[3]!.message_id}&wait=1`, 'GET', undefined, h);
    expect(later.body.messages).toEqual([]);
    expect(later.body.message_count).toBe(4);
  });

  it('postgres storage: a process given no encryption key warns at start that what it encrypts outlives its key; one given a key does not', async () => {
    const startWith = async (env: NodeJS.ProcessEnv) => {
      const lines: Array<{ level: number; msg: string }> = [];
      const stream = new Writable({
        write(chunk: Buffer, _encoding, done) {
          for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
          done();
        },
      });
      const server = await startServer({ databaseUrl: url, port: 0, env, logger: { level: 'warn', stream } });
      await server.close();
      return lines.filter((l) => l.msg.startsWith('no encryption key given'));
    };
    const without = await startWith({});
    expect(without).toHaveLength(1);
    expect(without[0]).toMatchObject({
      level: 40,
      msg: 'no encryption key given (ACS_ENCRYPTION_KEY or a data dir): this process encrypts provider keys with a random key of its own, which other processes and its own restarts cannot decrypt',
    });
    expect(await startWith({ ACS_ENCRYPTION_KEY: randomBytes(32).toString('hex') })).toEqual([]);
  });

  it('postgres storage: of two transactions that deadlock, the one PostgreSQL aborts is run again, and both commit', async () => {
    const db = await openPostgresDb(url);
    try {
      await db.query(`CREATE TABLE deadlock_probe (id int PRIMARY KEY, n int NOT NULL)`);
      await db.query(`INSERT INTO deadlock_probe VALUES (1, 0), (2, 0)`);
      let attempts = 0;
      let bothHoldOne!: () => void;
      let held = 0;
      const barrier = new Promise<void>((resolve) => (bothHoldOne = resolve));
      // Each takes one row, waits until the other holds its row, then asks for the other's: a
      // deadlock on the first attempts, whatever the timing; a second attempt does not wait.
      const crossing = (first: number, second: number) =>
        db.transaction(async (tx) => {
          attempts += 1;
          const firstAttempt = attempts <= 2;
          await tx.query(`UPDATE deadlock_probe SET n = n + 1 WHERE id = $1`, [first]);
          if (firstAttempt) {
            held += 1;
            if (held === 2) bothHoldOne();
            await barrier;
          }
          await tx.query(`UPDATE deadlock_probe SET n = n + 1 WHERE id = $1`, [second]);
        });
      await Promise.all([crossing(1, 2), crossing(2, 1)]);
      expect(attempts).toBe(3);
      expect(await db.query(`SELECT id, n FROM deadlock_probe ORDER BY id`)).toEqual([
        { id: 1, n: 2 },
        { id: 2, n: 2 },
      ]);
    } finally {
      await db.close();
    }
  });

  it('postgres storage: a statement run often is prepared once on its connection, and a table changed under it is read again with its new columns', async () => {
    const db = await openPostgresDb(url);
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    try {
      await db.query(`CREATE TABLE prepared_probe (id int PRIMARY KEY, a text NOT NULL)`);
      await db.query(`INSERT INTO prepared_probe VALUES (1, 'one')`);
      const read = `SELECT * FROM prepared_probe WHERE id = $1`;
      // One transaction is one connection: the statement's preparation is visible to it.
      const prepared = await db.transaction(async (tx) => {
        for (let i = 0; i < 4; i += 1) expect(await tx.query(read, [1])).toEqual([{ id: 1, a: 'one' }]);
        return tx.query<{ statement: string }>(`SELECT statement FROM pg_prepared_statements WHERE statement = $1`, [read]);
      });
      expect(prepared).toEqual([{ statement: read }]);
      for (let i = 0; i < 4; i += 1) await db.query(read, [1]);
      // Another process's migration changes the table: PostgreSQL refuses the plans prepared
      // for the old row type (0A000), and the statement is run again, outside and inside a transaction.
      await other.query(`ALTER TABLE prepared_probe ADD COLUMN b int NOT NULL DEFAULT 7`);
      expect(await db.query(read, [1])).toEqual([{ id: 1, a: 'one', b: 7 }]);
      await other.query(`ALTER TABLE prepared_probe DROP COLUMN a`);
      expect(await db.transaction((tx) => tx.query(read, [1]))).toEqual([{ id: 1, b: 7 }]);
      expect(await db.query(read, [1])).toEqual([{ id: 1, b: 7 }]);
    } finally {
      await other.end();
      await db.close();
    }
  });

  it('postgres notifier: after its LISTEN connection is killed it reconnects, wakes every waiter once and hears new notifications', async () => {
    const notifier = await createPgNotifier(url, { retryMs: 20 });
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      let wakes = 0;
      const woken = new Promise<void>((resolve) => {
        notifier.subscribe('waiting-thread', () => {
          wakes += 1;
          resolve();
        });
      });
      const killed = await admin.query(
        `SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`,
        [NOTIFIER_APPLICATION_NAME],
      );
      expect(killed.rows.length).toBeGreaterThan(0);
      await woken;
      expect(wakes).toBe(1);
      const heard = new Promise<void>((resolve) => notifier.subscribe('later-thread', resolve));
      // The reconnect has happened (the wake comes after LISTEN), so this notification is heard.
      await admin.query(`SELECT pg_notify($1, 'later-thread')`, [EVENTS_CHANNEL]);
      await heard;
    } finally {
      await admin.end();
      await notifier.close();
    }
  });

  it('postgres notifier: a key no other process follows is not announced; one that another process follows is, until it stops following', async () => {
    const writer = await createPgNotifier(url, { warmUpMs: 0 });
    const reader = await createPgNotifier(url, { warmUpMs: 0 });
    const observer = new pg.Client({ connectionString: url });
    await observer.connect();
    try {
      const sent: string[] = [];
      observer.on('notification', (message) => {
        if (message.channel === EVENTS_CHANNEL && message.payload) sent.push(message.payload);
      });
      await observer.query(`LISTEN ${EVENTS_CHANNEL}`);
      const heard: string[] = [];
      const stopFollowing = reader.subscribe('followed', () => heard.push('followed'));
      reader.subscribe('sentinel', () => heard.push('sentinel'));
      await eventually(async () => writer.followedElsewhere('followed') || undefined, 10_000);
      expect(writer.followedElsewhere('nobody-follows')).toBe(false);
      // Announcements go out in the order published: had the first been sent, it would precede the sentinel.
      writer.publish('nobody-follows');
      writer.publish('followed');
      writer.publish('sentinel');
      await eventually(async () => sent.includes('sentinel') || undefined, 10_000);
      expect(sent).toEqual(['followed', 'sentinel']);
      expect(heard).toEqual(['followed', 'sentinel']);
      stopFollowing();
      await eventually(async () => !writer.followedElsewhere('followed') || undefined, 10_000);
      writer.publish('followed');
      writer.publish('sentinel');
      await eventually(async () => sent.filter((key) => key === 'sentinel').length === 2 || undefined, 10_000);
      expect(sent).toEqual(['followed', 'sentinel', 'sentinel']);
      // A process that closes stops being announced to.
      await reader.close();
      await eventually(async () => !writer.followedElsewhere('sentinel') || undefined, 10_000);
    } finally {
      await observer.end();
      await reader.close();
      await writer.close();
    }
  });

  it('postgres notifier: a process that starts later learns what the others follow, and forgets the follows of a connection that is gone', async () => {
    const early = await createPgNotifier(url, { warmUpMs: 0 });
    const ghost = new pg.Client({ connectionString: url });
    await ghost.connect();
    let late: Awaited<ReturnType<typeof createPgNotifier>> | undefined;
    try {
      early.subscribe('followed-before', () => {});
      // A process killed without a word: it announced a follow and its connection then went away.
      await ghost.query(`LISTEN ${FOLLOWS_CHANNEL}`);
      late = await createPgNotifier(url, { warmUpMs: 0, sweepMs: 50 });
      // It only hears the follow if it asks: the announcement was made before it listened.
      await eventually(async () => late!.followedElsewhere('followed-before') || undefined, 10_000);
      await ghost.query(`SELECT pg_notify($1, '+ghost-key')`, [FOLLOWS_CHANNEL]);
      await eventually(async () => late!.followedElsewhere('ghost-key') || undefined, 10_000);
      await ghost.end();
      await eventually(async () => !late!.followedElsewhere('ghost-key') || undefined, 10_000);
      expect(late.followedElsewhere('followed-before')).toBe(true);
    } finally {
      await late?.close();
      await early.close();
    }
  });

  it('postgres notifier: a rolled-back append wakes nobody and a committed one wakes its organization', async () => {
    const notifier = await createPgNotifier(url);
    const [one] = servers as [RunningServer];
    try {
      const { org_id, api_key } = await one.provisionOrganization('pg-notify');
      const h = { 'x-api-key': api_key };
      const team = await request(`${one.url}/api/v1/organizations/${org_id}/teams`, 'POST', { team_name: 't' }, h);
      const ann = await request(`${one.url}/api/v1/teams/${team.body.team_id}/humans`, 'POST', { name: 'ann' }, h);
      const bob = await request(`${one.url}/api/v1/teams/${team.body.team_id}/humans`, 'POST', { name: 'bob' }, h);
      const edge = await request(`${one.url}/api/v1/teams/${team.body.team_id}/edges`, 'POST', { participants: [ann.body.human_id, bob.body.human_id] }, h);
      const thread = await request(`${one.url}/api/v1/edges/${edge.body.edge_id}/threads`, 'POST', { sender_agent_id: ann.body.human_id, content: 'hi' }, h);
      // The setup's notifications may still be on their way (the server numbers events and sends
      // their NOTIFY after its response): wait until they have passed. Reading the log numbers
      // whatever is left, so every NOTIFY of the organization is queued on the server's notifier
      // connection by then; a change to another organization, made after that read, is sent after
      // them on that connection, so once its notification arrives theirs have.
      expect((await request(`${one.url}/api/v1/organizations/${org_id}/events?limit=1`, 'GET', undefined, h)).status).toBe(200);
      const other = await one.provisionOrganization('pg-notify-other');
      const drained = new Promise<void>((resolve) => notifier.subscribe(other.org_id, resolve));
      expect((await request(`${one.url}/api/v1/organizations/${other.org_id}/teams`, 'POST', { team_name: 'later' }, { 'x-api-key': other.api_key })).status).toBe(201);
      await drained;
      const events: string[] = [];
      let wake: () => void = () => {};
      const woken = new Promise<void>((resolve) => {
        wake = resolve;
      });
      notifier.subscribe(org_id, () => {
        events.push('wake');
        wake();
      });
      const sentinel = new Promise<void>((resolve) =>
        notifier.subscribe('sentinel', () => {
          events.push('sentinel');
          resolve();
        }),
      );
      // Not a participant: refused before anything is written.
      const refused = await request(`${one.url}/api/v1/threads/${thread.body.thread_id}/messages`, 'POST', { sender_agent_id: team.body.team_id, content: 'no' }, h);
      expect(refused.status).toBe(403);
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      // An insert that is rolled back sends nothing either.
      await admin.query('BEGIN');
      await admin.query(
        `INSERT INTO messages (id, thread_id, seq, sender_id, content) VALUES (gen_random_uuid(), $1, 999, $2, 'rolled back')`,
        [thread.body.thread_id, ann.body.human_id],
      );
      await admin.query('ROLLBACK');
      // Notifications arrive in commit order: anything the rollback had sent would precede this.
      await admin.query(`SELECT pg_notify($1, 'sentinel')`, [EVENTS_CHANNEL]);
      await admin.end();
      await sentinel;
      await request(`${one.url}/api/v1/threads/${thread.body.thread_id}/messages`, 'POST', { sender_agent_id: bob.body.human_id, content: 'yes' }, h);
      await woken;
      expect(events).toEqual(['sentinel', 'wake']);
    } finally {
      await notifier.close();
    }
  });
});
