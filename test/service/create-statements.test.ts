import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import type { Db } from '../../service/storage/db.ts';
import { postgresBackend } from '../support/postgres.ts';
import { startHarnessWithDb, type Harness, type Reply } from './helpers.ts';

// What a create of a team member costs the database (docs/performance.md, "Fewer statements per
// create"): the apply's 3,000 creates of agents, humans and edges are most of its requests.

/** The statements of each transaction the server ran, in order. */
let transactions: string[][];
let h: Harness & { db: Db };
/** A transaction statement to stop after (see {@link pauseAfter}). */
let pause: { pattern: RegExp; reached: () => void; gate: Promise<void> } | undefined;

/**
 * Stops the next transaction statement matching `pattern`, once it has run, until `release()`:
 * `reached` resolves when it has stopped there (its transaction still open, its locks held).
 */
function pauseAfter(pattern: RegExp): { reached: Promise<void>; release: () => void } {
  let reached!: () => void;
  let release!: () => void;
  const reachedPromise = new Promise<void>((resolve) => (reached = resolve));
  pause = { pattern, reached, gate: new Promise<void>((resolve) => (release = resolve)) };
  return { reached: reachedPromise, release };
}

beforeAll(async () => {
  transactions = [];
  h = await startHarnessWithDb('creates', {
    wrap: (db) =>
      ({
        query: (sql: string, params?: unknown[]) => db.query(sql, params),
        transaction: (fn) =>
          db.transaction((tx) => {
            const statements: string[] = [];
            transactions.push(statements);
            return fn({
              query: async <T,>(sql: string, params?: unknown[]) => {
                statements.push(sql);
                const result = await tx.query<T>(sql, params);
                const stop = pause;
                if (stop?.pattern.test(sql)) {
                  pause = undefined;
                  stop.reached();
                  await stop.gate;
                }
                return result;
              },
            });
          }),
        close: () => db.close(),
      }) as Db,
  });
});
afterAll(async () => {
  await h.server.close();
});

/** The statements of the last transaction that ran one matching `pattern`. */
function transactionOf(pattern: RegExp): string[] {
  const found = transactions.filter((statements) => statements.some((sql) => pattern.test(sql))).at(-1);
  if (!found) throw new Error(`no transaction ran ${pattern}`);
  return found;
}

describe('creates of team members', () => {
  it('creates: an agent, a human and an edge each take two statements in their transaction: the team held against deletion (FOR KEY SHARE), then insert with the event', async () => {
    const team = (await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'counted' })).body;
    const agent = await h.call('POST', `/api/v1/teams/${team.team_id}/agents`, { name: 'bot' });
    expect(agent.status).toBe(201);
    const agentTx = transactionOf(/INSERT INTO participants/);
    const human = await h.call('POST', `/api/v1/teams/${team.team_id}/humans`, { name: 'ann' });
    expect(human.status).toBe(201);
    const humanTx = transactionOf(/INSERT INTO participants/);
    const edge = await h.call('POST', `/api/v1/teams/${team.team_id}/edges`, { participants: [human.body.human_id, agent.body.agent_id] });
    expect(edge.status).toBe(201);
    const edgeTx = transactionOf(/INSERT INTO edges/);
    for (const statements of [agentTx, humanTx, edgeTx]) {
      expect(statements).toHaveLength(2);
      expect(statements[0]).toMatch(/FOR KEY SHARE OF t/);
      expect(statements[1]).toMatch(/INSERT INTO[\s\S]*acs_append_event/);
    }
    expect(humanTx).not.toBe(agentTx);
  });

  it('creates: a taken name and an existing pair are still told apart from other refusals, with existing_id', async () => {
    const team = (await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'refusals' })).body;
    const bot = (await h.call('POST', `/api/v1/teams/${team.team_id}/agents`, { name: 'bot' })).body;
    const ann = (await h.call('POST', `/api/v1/teams/${team.team_id}/humans`, { name: 'ann' })).body;
    const twin = await h.call('POST', `/api/v1/teams/${team.team_id}/humans`, { name: 'bot' });
    expect(twin.status).toBe(409);
    expect(twin.body).toMatchObject({ code: 'conflict', existing_id: bot.agent_id });
    const edge = (await h.call('POST', `/api/v1/teams/${team.team_id}/edges`, { participants: [ann.human_id, bot.agent_id] })).body;
    const again = await h.call('POST', `/api/v1/teams/${team.team_id}/edges`, { participants: [bot.agent_id, ann.human_id] });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: 'conflict', existing_id: edge.edge_id });
    const other = (await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'elsewhere' })).body;
    const stranger = (await h.call('POST', `/api/v1/teams/${other.team_id}/humans`, { name: 'eve' })).body;
    const across = await h.call('POST', `/api/v1/teams/${team.team_id}/edges`, { participants: [ann.human_id, stranger.human_id] });
    expect(across.status).toBe(422);
    expect(across.body).toMatchObject({ code: 'unknown_reference', errors: [{ path: 'participants.1' }] });
    // Neither refused edge nor the refused human was stored, nor an event written for them.
    expect((await h.call('GET', `/api/v1/teams/${team.team_id}/edges`)).body.edges).toHaveLength(1);
    expect((await h.call('GET', `/api/v1/teams/${team.team_id}/humans`)).body.humans).toHaveLength(1);
    const events = (await h.call('GET', `/api/v1/organizations/${h.orgId}/events?team_id=${team.team_id}`)).body.events as Array<{ type: string }>;
    expect(events.map((event) => event.type)).toEqual(['team.created', 'agent.created', 'human.created', 'edge.created']);
  });
});

describe('creates of teams', () => {
  it('creates: a team takes two statements in its transaction: its organization held against deletion (FOR KEY SHARE), then the insert with its event', async () => {
    const created = await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'two-statements', description: 'd' });
    expect(created.status).toBe(201);
    const statements = transactionOf(/INSERT INTO teams/);
    expect(statements).toHaveLength(2);
    expect(statements[0]).toMatch(/FOR KEY SHARE OF o/);
    expect(statements[1]).toMatch(/INSERT INTO teams[\s\S]*ON CONFLICT \(org_id, name\) DO NOTHING[\s\S]*acs_append_event/);
    // The answer, the stored team and its event agree.
    expect(created.body).toMatchObject({ team_name: 'two-statements', description: 'd', agent_count: 0, edge_count: 0, deletion_protection: false });
    expect((await h.call('GET', `/api/v1/teams/${created.body.team_id}`)).body).toMatchObject(created.body);
    const events = (await h.call('GET', `/api/v1/organizations/${h.orgId}/events?team_id=${created.body.team_id}`)).body.events as Array<{ type: string; data: unknown }>;
    expect(events.map((e) => [e.type, e.data])).toEqual([['team.created', created.body]]);
  });

  it('creates: a team name taken in the organization is a 409 conflict with existing_id, and writes no event', async () => {
    const first = (await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'taken' })).body;
    const before = (await h.call('GET', `/api/v1/organizations/${h.orgId}/events`)).body.events.length as number;
    const again = await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'taken' });
    expect([again.status, again.body.code, again.body.existing_id]).toEqual([409, 'conflict', first.team_id]);
    expect((await h.call('GET', `/api/v1/organizations/${h.orgId}/events`)).body.events).toHaveLength(before);
  });

  it('creates: a team in an organization the key does not reach is 404, and nothing is stored', async () => {
    const reply = await h.call('POST', `/api/v1/organizations/${randomUUID()}/teams`, { team_name: 'nowhere' });
    expect([reply.status, reply.body.code]).toEqual([404, 'not_found']);
    expect(await h.db.query(`SELECT 1 FROM teams WHERE name = 'nowhere'`)).toHaveLength(0);
  });
});

/** What a transaction of the test's own (as another process's request would) holds until `release`. */
async function holding(sql: string, params: unknown[]): Promise<{ release: (commit: boolean) => Promise<void> }> {
  let finish!: (commit: boolean) => void;
  const finished = new Promise<boolean>((resolve) => (finish = resolve));
  let ran!: () => void;
  const running = new Promise<void>((resolve) => (ran = resolve));
  const done = h.db
    .transaction(async (tx) => {
      await tx.query(sql, params);
      ran();
      if (!(await finished)) throw new Error('rolled back by the test');
    })
    .catch((error: unknown) => {
      if (!(error instanceof Error && error.message === 'rolled back by the test')) throw error;
    });
  await Promise.race([running, done]);
  return {
    release: async (commit) => {
      finish(commit);
      await done;
    },
  };
}

/** Resolves once a request of the server waits for a lock (PostgreSQL only). */
async function lockWaitSeen(): Promise<'waited'> {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 20))) {
    const rows = await h.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
    if (rows[0]!.n > 0) return 'waited';
  }
  throw new Error('no request waited for a lock within 30 s');
}

/**
 * The answer of `send()` when it must wait for a transaction of the test's own that ran `sql`:
 * that transaction commits (or with `commit` false rolls back) once the request is seen waiting.
 */
async function answerAfterWaiting(sql: string, params: unknown[], send: () => Promise<Reply>, commit = true): Promise<Reply> {
  const held = await holding(sql, params);
  const reply = send();
  try {
    await lockWaitSeen();
  } finally {
    await held.release(commit);
  }
  return reply;
}

/** The answer of `send()`, which must come without the request waiting for a lock. */
async function answeredWithoutWaiting(send: () => Promise<Reply>): Promise<Reply> {
  const reply = send();
  expect(await Promise.race([reply.then(() => 'answered' as const), lockWaitSeen()])).toBe('answered');
  return reply;
}

const insertTeam = `INSERT INTO teams (id, org_id, name, engine_id) VALUES ($1, $2, $3, $4)`;
const insertAgent = `INSERT INTO participants (id, team_id, kind, name) VALUES ($1, $2, 'agent', $3)`;

// PGlite runs one transaction at a time, so only PostgreSQL can interleave these.
describe.runIf(postgresBackend)('creates of teams under concurrency', () => {
  it('concurrency: a team creation does not wait for another team of the organization whose creation has not committed', async () => {
    const held = await holding(insertTeam, [randomUUID(), h.orgId, 'uncommitted', randomUUID()]);
    try {
      expect((await answeredWithoutWaiting(() => h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'beside-it' }))).status).toBe(201);
    } finally {
      await held.release(false);
    }
  });

  it('concurrency: a creation of a name another uncommitted creation holds waits for it, then is a 409 conflict with its id, or a 201 if it rolled back', async () => {
    for (const commit of [true, false]) {
      const name = `contested-${commit}`;
      const id = randomUUID();
      const answer = await answerAfterWaiting(insertTeam, [id, h.orgId, name, randomUUID()], () => h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: name }), commit);
      if (commit) expect([answer.status, answer.body.code, answer.body.existing_id]).toEqual([409, 'conflict', id]);
      else expect([answer.status, answer.body.team_name]).toEqual([201, name]);
    }
  });

  it('concurrency: a team creation that finds its name taken by a team deleted before it looks for it creates the team: 201', async () => {
    const holder = (await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'vanishing' })).body;
    const paused = pauseAfter(/INSERT INTO teams/);
    const reply = h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'vanishing' });
    await paused.reached;
    try {
      // A team's deletion takes no lock the creation holds: it does not wait for it.
      expect((await h.call('DELETE', `/api/v1/teams/${holder.team_id}`)).status).toBe(200);
    } finally {
      paused.release();
    }
    const answer = await reply;
    expect([answer.status, answer.body.team_name]).toEqual([201, 'vanishing']);
    expect(answer.body.team_id).not.toBe(holder.team_id);
  });

  it('concurrency: a team creation that waits for its organization\'s deletion finds the organization gone: 404, and no team is stored', async () => {
    const org = (await h.call('POST', '/api/v1/organizations', { org_name: `doomed-${randomUUID().slice(0, 8)}` })).body;
    const answer = await answerAfterWaiting(`DELETE FROM organizations WHERE id = $1`, [org.org_id], () =>
      h.call('POST', `/api/v1/organizations/${org.org_id}/teams`, { team_name: 'too-late' }),
    );
    expect([answer.status, answer.body.code]).toEqual([404, 'not_found']);
    expect(await h.db.query(`SELECT 1 FROM teams WHERE org_id = $1`, [org.org_id])).toHaveLength(0);
  });
});

describe.runIf(postgresBackend)('creates of team members under concurrency', () => {
  const newTeam = async () => (await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: `side-${randomUUID().slice(0, 8)}` })).body.team_id as string;

  it('concurrency: an agent\'s and an edge\'s creation do not wait for another member of the team whose creation has not committed', async () => {
    const teamId = await newTeam();
    const ann = (await h.call('POST', `/api/v1/teams/${teamId}/humans`, { name: 'ann' })).body.human_id as string;
    const bob = (await h.call('POST', `/api/v1/teams/${teamId}/humans`, { name: 'bob' })).body.human_id as string;
    const held = await holding(insertAgent, [randomUUID(), teamId, 'uncommitted']);
    try {
      expect((await answeredWithoutWaiting(() => h.call('POST', `/api/v1/teams/${teamId}/agents`, { name: 'beside-it' }))).status).toBe(201);
      expect((await answeredWithoutWaiting(() => h.call('POST', `/api/v1/teams/${teamId}/edges`, { participants: [ann, bob] }))).status).toBe(201);
    } finally {
      await held.release(false);
    }
  });

  it('concurrency: a creation of a name another uncommitted member creation holds waits for it, then is a 409 conflict with its id, or a 201 if it rolled back', async () => {
    const teamId = await newTeam();
    for (const commit of [true, false]) {
      const name = `contested-${commit}`;
      const id = randomUUID();
      const answer = await answerAfterWaiting(insertAgent, [id, teamId, name], () => h.call('POST', `/api/v1/teams/${teamId}/humans`, { name }), commit);
      if (commit) expect([answer.status, answer.body.code, answer.body.existing_id]).toEqual([409, 'conflict', id]);
      else expect([answer.status, answer.body.name]).toEqual([201, name]);
    }
  });

  it('concurrency: a member\'s creation waits for an uncommitted rename of another member to its name, then is a 409 conflict with that member\'s id', async () => {
    const teamId = await newTeam();
    const eve = (await h.call('POST', `/api/v1/teams/${teamId}/humans`, { name: 'eve' })).body.human_id as string;
    // What a rename holds (participants.ts, assertNameFree): the team, then the renamed row.
    const answer = await answerAfterWaiting(
      `WITH team AS (SELECT 1 FROM teams WHERE id = $1 FOR UPDATE) UPDATE participants SET name = 'mallory' WHERE id = $2 AND EXISTS (SELECT 1 FROM team)`,
      [teamId, eve],
      () => h.call('POST', `/api/v1/teams/${teamId}/agents`, { name: 'mallory' }),
    );
    expect([answer.status, answer.body.code, answer.body.existing_id]).toEqual([409, 'conflict', eve]);
  });

  it('concurrency: a team\'s PATCH waits for a member\'s creation in progress, and its answer and team.updated event count that member', async () => {
    const teamId = await newTeam();
    const paused = pauseAfter(/INSERT INTO participants/);
    const agent = h.call('POST', `/api/v1/teams/${teamId}/agents`, { name: 'counted' });
    await paused.reached;
    let patch: Promise<Reply>;
    try {
      patch = h.call('PATCH', `/api/v1/teams/${teamId}`, { description: 'after' });
      expect(await Promise.race([patch.then(() => 'answered' as const), lockWaitSeen()])).toBe('waited');
    } finally {
      paused.release();
    }
    expect((await agent).status).toBe(201);
    const patched = await patch;
    expect([patched.status, patched.body.agent_count]).toEqual([200, 1]);
    const events = (await h.call('GET', `/api/v1/organizations/${h.orgId}/events?team_id=${teamId}`)).body.events as Array<{ type: string; data: { agent_count?: number } }>;
    expect(events.filter((e) => e.type === 'team.updated').map((e) => e.data.agent_count)).toEqual([1]);
  });

  it('concurrency: a member\'s creation that waits for its team\'s deletion finds the team gone: 404, and nothing is stored', async () => {
    const teamId = await newTeam();
    const answer = await answerAfterWaiting(`DELETE FROM teams WHERE id = $1`, [teamId], () => h.call('POST', `/api/v1/teams/${teamId}/agents`, { name: 'too-late' }));
    expect([answer.status, answer.body.code]).toEqual([404, 'not_found']);
    expect(await h.db.query(`SELECT 1 FROM participants WHERE team_id = $1`, [teamId])).toHaveLength(0);
  });
});
