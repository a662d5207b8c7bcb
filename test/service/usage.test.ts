import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { AgentUsage, TeamUsage } from '../../api/schemas.ts';
import { postgresBackend } from '../support/postgres.ts';
import { buildTeam, holdLocks, lockWaitSeen, startHarness, startHarnessWithDb, threadMessages, waitForThread, type Harness } from './helpers.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** A harness whose warnings are kept as parsed JSON lines. */
async function harnessWithLog(): Promise<Harness & { warnings: Array<Record<string, unknown>> }> {
  const warnings: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) warnings.push(JSON.parse(line));
      done();
    },
  });
  const h = await startHarness({ inMemory: true, logger: { level: 'warn', stream } });
  cleanups.push(() => h.server.close());
  return { ...h, warnings };
}

/** Echo's token counts (providers/echo.ts): one token per 4 characters, rounded up. */
const tokens = (text: string) => Math.ceil(text.length / 4);
const nextUtcDay = () => {
  const now = new Date();
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)).toISOString();
};

describe('usage', () => {
  it('usage: every echo reply is recorded with its tokens, per agent and per team, from since on', async () => {
    const h = await startHarness();
    cleanups.push(() => h.server.close());
    await h.call('PUT', `/organizations/${h.orgId}/api-keys/echo`, { api_key: 'k' });
    const ids = await buildTeam(h, { provider: 'echo', model: 'echo-1', instructions: 'Be brief.' });
    const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'hello' });
    await waitForThread(h, thread.body.thread_id, (ms) => ms.length >= 2);
    await h.call('POST', `/api/v1/threads/${thread.body.thread_id}/messages`, { sender_agent_id: ids.humanId, content: 'again' });
    await waitForThread(h, thread.body.thread_id, (ms) => ms.length >= 4);

    // Input: instructions + the conversation up to the message answered; output: the reply.
    const first = { input: tokens('Be brief.') + tokens('hello'), output: tokens('echo: hello') };
    const second = { input: tokens('Be brief.') + tokens('hello') + tokens('echo: hello') + tokens('again'), output: tokens('echo: again') };
    const agent = await h.call('GET', `/api/v1/agents/${ids.agentId}/usage`);
    expect(agent.status).toBe(200);
    expect(AgentUsage.parse(agent.body)).toEqual({
      agent_id: ids.agentId,
      team_id: ids.teamId,
      name: 'bot',
      since: expect.stringMatching(/T00:00:00\.000Z$/),
      calls: 2,
      input_tokens: first.input + second.input,
      output_tokens: first.output + second.output,
      total_tokens: first.input + second.input + first.output + second.output,
      by_model: [{ provider: 'echo', model: 'echo-1', calls: 2, input_tokens: first.input + second.input, output_tokens: first.output + second.output }],
      max_tokens_per_day: null,
      tokens_today: first.input + second.input + first.output + second.output,
      budget_exhausted_until: null,
    });
    const team = await h.call('GET', `/v1/teams/${ids.teamId}/usage`);
    expect(TeamUsage.parse(team.body)).toMatchObject({ team_id: ids.teamId, calls: 2, total_tokens: agent.body.total_tokens, agents: [agent.body] });

    const future = new Date(Date.now() + 3_600_000).toISOString();
    const later = await h.call('GET', `/api/v1/agents/${ids.agentId}/usage?since=${encodeURIComponent(future)}`);
    expect(later.body).toMatchObject({ since: future, calls: 0, total_tokens: 0, by_model: [], tokens_today: agent.body.tokens_today });
    const offset = await h.call('GET', `/api/v1/teams/${ids.teamId}/usage?since=${encodeURIComponent('2020-01-01T01:00:00+01:00')}`);
    expect(offset.body).toMatchObject({ since: '2020-01-01T00:00:00.000Z', calls: 2 });
    // Any year a timestamp holds is a valid start.
    const ancient = await h.call('GET', `/api/v1/agents/${ids.agentId}/usage?since=0020-02-29T00:00:00Z`);
    expect(ancient.body).toMatchObject({ since: '0020-02-29T00:00:00.000Z', calls: 2 });
  });

  it('usage: a malformed since or an unknown query parameter is 400 invalid_request naming it', async () => {
    const h = await startHarness();
    cleanups.push(() => h.server.close());
    const ids = await buildTeam(h, { provider: 'echo' });
    const bad = await h.call('GET', `/api/v1/agents/${ids.agentId}/usage?since=yesterday`);
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'invalid_request', errors: [{ path: 'since' }] });
    // Before the year 1 (UTC) PostgreSQL has no year 0 but BC years, which the answer could not spell.
    for (const early of ['0000-06-01T00:00:00Z', '0001-01-01T00:00:00+14:00']) {
      const reply = await h.call('GET', `/api/v1/teams/${ids.teamId}/usage?since=${encodeURIComponent(early)}`);
      expect(reply.status, early).toBe(400);
      expect(reply.body, early).toMatchObject({ code: 'invalid_request', errors: [{ path: 'since' }] });
    }
    const unknown = await h.call('GET', `/api/v1/teams/${ids.teamId}/usage?snce=2026-01-01T00:00:00Z`);
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ code: 'invalid_request', errors: [{ path: 'snce', message: 'unknown query parameter' }] });
  });

  it("usage: another organization's agent or team is 404 not_found, as if it did not exist", async () => {
    const h = await startHarness();
    cleanups.push(() => h.server.close());
    const ids = await buildTeam(h, { provider: 'echo' });
    const other = await h.server.provisionOrganization('other');
    for (const path of [`/api/v1/agents/${ids.agentId}/usage`, `/api/v1/teams/${ids.teamId}/usage`]) {
      const reply = await h.call('GET', path, undefined, { 'x-api-key': other.api_key });
      expect(reply.status).toBe(404);
      expect(reply.body.code).toBe('not_found');
    }
  });

  it('usage: a team lists its provider agents without usage too, and keeps a deleted agent in its totals', async () => {
    const h = await startHarness();
    cleanups.push(() => h.server.close());
    await h.call('PUT', `/organizations/${h.orgId}/api-keys/echo`, { api_key: 'k' });
    const ids = await buildTeam(h, { provider: 'echo' });
    const idle = await h.call('POST', `/api/v1/teams/${ids.teamId}/agents`, { name: 'idle', provider: 'echo', max_tokens_per_day: 100 });
    await h.call('POST', `/api/v1/teams/${ids.teamId}/agents`, { name: 'external' });
    const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'hi' });
    await waitForThread(h, thread.body.thread_id, (ms) => ms.length >= 2);
    const before = (await h.call('GET', `/api/v1/teams/${ids.teamId}/usage`)).body;
    expect(before.agents.map((a: { name: string }) => a.name)).toEqual(['bot', 'idle']);
    expect(before.agents[1]).toMatchObject({ calls: 0, total_tokens: 0, max_tokens_per_day: 100, tokens_today: 0 });

    await h.call('DELETE', `/api/v1/edges/${ids.edgeId}`);
    expect((await h.call('DELETE', `/api/v1/agents/${ids.agentId}`)).status).toBe(200);
    const after = (await h.call('GET', `/api/v1/teams/${ids.teamId}/usage`)).body;
    expect(after.total_tokens).toBe(before.total_tokens);
    expect(after.agents).toEqual([
      expect.objectContaining({ agent_id: idle.body.agent_id, name: 'idle' }),
      expect.objectContaining({ agent_id: ids.agentId, name: null, calls: 1, max_tokens_per_day: null }),
    ]);
  });
});

describe('budgets', () => {
  it('budgets: once its daily budget is spent an agent answers nothing more until it is raised, logged once, never twice per message', async () => {
    const h = await harnessWithLog();
    await h.call('PUT', `/organizations/${h.orgId}/api-keys/echo`, { api_key: 'k' });
    // 'hello' costs 2 input + 3 output tokens: the first reply spends the budget exactly.
    const ids = await buildTeam(h, { provider: 'echo', max_tokens_per_day: tokens('hello') + tokens('echo: hello') });
    const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'hello' });
    const threadId: string = thread.body.thread_id;
    await waitForThread(h, threadId, (ms) => ms.length >= 2);
    await h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: ids.humanId, content: 'again' });
    const other = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'elsewhere' });

    const spent = async () => (await h.call('GET', `/api/v1/agents/${ids.agentId}/usage`)).body;
    // Wait until the loop has looked at both threads and logged the budget, then check nothing was answered.
    const deadline = Date.now() + 30_000;
    while (!h.warnings.some((w) => String(w.msg).includes('budget spent')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const usage = await spent();
    expect(usage).toMatchObject({ calls: 1, tokens_today: 5, max_tokens_per_day: 5, budget_exhausted_until: nextUtcDay() });
    const quiet = await h.call('GET', `/api/v1/threads/${threadId}?after=${(await threadMessages(h, threadId))[2]!.message_id}&wait=1`);
    expect(quiet.body.messages).toEqual([]);
    expect((await threadMessages(h, other.body.thread_id)).map((m) => m.content)).toEqual(['elsewhere']);
    expect(h.warnings.filter((w) => String(w.msg).includes('budget spent'))).toEqual([
      expect.objectContaining({ agent_id: ids.agentId, max_tokens_per_day: 5, tokens_today: 5, until: nextUtcDay() }),
    ]);

    expect((await h.call('PATCH', `/api/v1/agents/${ids.agentId}`, { max_tokens_per_day: 1000 })).body.max_tokens_per_day).toBe(1000);
    const all = await waitForThread(h, threadId, (ms) => ms.some((m) => m.content === 'echo: again'));
    await waitForThread(h, other.body.thread_id, (ms) => ms.length >= 2);
    expect(all.map((m) => m.content)).toEqual(['hello', 'echo: hello', 'again', 'echo: again']);
    expect(await spent()).toMatchObject({ calls: 3, budget_exhausted_until: null });
  });
});

describe('agents: model and budget fields', () => {
  it('agents: a provider other than echo without a model is 400 invalid_request naming model, on create and on PATCH', async () => {
    const h = await startHarness();
    cleanups.push(() => h.server.close());
    const team = await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'models' });
    const agents = `/api/v1/teams/${team.body.team_id}/agents`;
    const refused = await h.call('POST', agents, { name: 'a', provider: 'openai' });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ code: 'invalid_request', errors: [{ path: 'model', message: expect.stringContaining('openai') }] });
    expect((await h.call('GET', agents)).body.agents).toEqual([]);

    const echo = await h.call('POST', agents, { name: 'e', provider: 'echo' });
    expect(echo.status).toBe(201);
    const patched = await h.call('PATCH', `/api/v1/agents/${echo.body.agent_id}`, { provider: 'anthropic' });
    expect(patched.status).toBe(400);
    expect(patched.body.errors).toEqual([expect.objectContaining({ path: 'model' })]);
    const claude = await h.call('PATCH', `/api/v1/agents/${echo.body.agent_id}`, { provider: 'anthropic', model: 'claude-x' });
    expect(claude.body).toMatchObject({ provider: 'anthropic', model: 'claude-x' });
    expect((await h.call('PATCH', `/api/v1/agents/${echo.body.agent_id}`, { model: null })).status).toBe(400);
    expect((await h.call('GET', `/api/v1/agents/${echo.body.agent_id}`)).body.model).toBe('claude-x');
    expect((await h.call('PATCH', `/api/v1/agents/${echo.body.agent_id}`, { provider: null, model: null })).body).toMatchObject({ provider: null, model: null });
  });

  it('agents: max_tokens_per_day is null by default, kept, cleared with null, and must be a positive integer', async () => {
    const h = await startHarness();
    cleanups.push(() => h.server.close());
    const team = await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'budgets' });
    const agents = `/api/v1/teams/${team.body.team_id}/agents`;
    expect((await h.call('POST', agents, { name: 'free' })).body.max_tokens_per_day).toBeNull();
    const capped = await h.call('POST', agents, { name: 'capped', provider: 'echo', max_tokens_per_day: 50_000 });
    expect(capped.body.max_tokens_per_day).toBe(50_000);
    expect((await h.call('GET', `/api/v1/agents/${capped.body.agent_id}`)).body.max_tokens_per_day).toBe(50_000);
    expect((await h.call('PATCH', `/api/v1/agents/${capped.body.agent_id}`, { max_tokens_per_day: null })).body.max_tokens_per_day).toBeNull();
    for (const bad of [0, -1, 1.5, '100']) {
      const reply = await h.call('POST', agents, { name: `bad-${String(bad)}`, max_tokens_per_day: bad });
      expect(reply.status).toBe(400);
      expect(reply.body.errors).toEqual([expect.objectContaining({ path: 'max_tokens_per_day' })]);
    }
  });
});

// PGlite runs one transaction at a time, so only PostgreSQL can interleave two changes of one agent.
describe.runIf(postgresBackend)('agents: concurrent changes', () => {
  it('agents: a PATCH that waits for another change of the same agent keeps that change (budget, provider, status)', async () => {
    const h = await startHarnessWithDb();
    cleanups.push(() => h.server.close());
    const ids = await buildTeam(h);
    // Another process's PATCH, not yet committed, gives the agent a budget and a provider and pauses it.
    const other = await holdLocks(h.db, `UPDATE participants SET max_tokens_per_day = 1000, provider = 'echo', status = 'paused' WHERE id = $1`, [ids.agentId]);
    const patching = h.call('PATCH', `/api/v1/agents/${ids.agentId}`, { instructions: 'Be brief.' });
    try {
      await lockWaitSeen(h.db, 'participants');
    } finally {
      await other.release();
    }
    const patched = await patching;
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ instructions: 'Be brief.', max_tokens_per_day: 1000, provider: 'echo', status: 'paused' });
    expect((await h.call('GET', `/api/v1/agents/${ids.agentId}`)).body).toMatchObject({ instructions: 'Be brief.', max_tokens_per_day: 1000, provider: 'echo', status: 'paused' });
  });

  it('agents: a message appended while the agent is being given a provider is answered', async () => {
    const h = await startHarnessWithDb();
    cleanups.push(() => h.server.close());
    const ids = await buildTeam(h);
    await h.call('PUT', `/organizations/${h.orgId}/api-keys/echo`, { api_key: 'echo-key' });
    const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'first' });
    // Another process's append, not yet committed: its insert found the agent without a provider.
    const append = await holdLocks(h.db, `SELECT * FROM acs_append_message(gen_random_uuid(), $1, $2, 'second', '[]'::jsonb, NULL, NULL, NULL, false)`, [
      thread.body.thread_id,
      ids.humanId,
    ]);
    const patching = h.call('PATCH', `/api/v1/agents/${ids.agentId}`, { provider: 'echo' });
    try {
      // The PATCH waits for the append (or, where nothing makes it wait, is done first).
      await Promise.race([patching, lockWaitSeen(h.db, 'FOR SHARE OF th')]);
    } finally {
      await append.release();
    }
    expect((await patching).status).toBe(200);
    const messages = await waitForThread(h, thread.body.thread_id, (ms) => ms.some((m) => m.content === 'echo: second'), 10_000);
    expect(messages.filter((m) => m.sender_id === ids.agentId).map((m) => m.content)).toContain('echo: second');
  });
});
