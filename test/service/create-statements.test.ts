import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../service/storage/db.ts';
import { startHarnessWithDb, type Harness } from './helpers.ts';

// What a create of a team member costs the database (docs/performance.md, "Fewer statements per
// create"): the apply's 3,000 creates of agents, humans and edges are most of its requests.

/** The statements of each transaction the server ran, in order. */
let transactions: string[][];
let h: Harness;

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
            return fn({ query: (sql: string, params?: unknown[]) => (statements.push(sql), tx.query(sql, params)) });
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
  it('creates: an agent, a human and an edge each take two statements in their transaction: lock the team, then insert with the event', async () => {
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
      expect(statements[0]).toMatch(/FOR UPDATE OF t/);
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
