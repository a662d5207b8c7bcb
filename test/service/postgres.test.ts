import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../service/index.ts';
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
    servers = await Promise.all([startServer({ databaseUrl: url, port: 0, tickMs: 20 }), startServer({ databaseUrl: url, port: 0, tickMs: 20 })]);
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
    // The in-process notifier does not cross processes, so poll with short pauses.
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
});
