/**
 * acs-server's metrics (issue 42; docs/operating-acs-server.md, "Metrics"): a live server with
 * `metricsListen` is sent known traffic over real HTTP, and its listener is scraped and read with
 * Prometheus's own parser (Python's prometheus_client, test/support/prometheus.ts): the values
 * must be what the traffic was, in both formats, and no label may carry an id, a key or a name.
 * Runs on PGlite, and on PostgreSQL in the `postgres` project (where the pool's gauge exists).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { postgresBackend } from '../support/postgres.ts';
import { describeWithParser, installParser, scrape, scrapeUntil } from '../support/prometheus.ts';
import { startReceiver, type Receiver } from '../support/webhook-receiver.ts';
import type { Db } from '../../service/storage/db.ts';
import { buildTeam, holdLocks, request, startHarness, startHarnessWithDb, waitForThread, type Harness } from './helpers.ts';
import { makeTeam, openThread, toolCalls } from './turn-helpers.ts';

const local = { host: '127.0.0.1', port: 0 };

describeWithParser('metrics of acs-server', () => {
  let h: Harness;
  let url: string;
  let receiver: Receiver;
  /** Every id, key and name the traffic carried: none may reach a label. */
  const tenantValues: string[] = [];

  beforeAll(async () => {
    await installParser();
    receiver = await startReceiver();
    h = await startHarness({ inMemory: true, metricsListen: local, webhooks: { allowPrivate: true, pollMs: 500 } });
    url = h.server.metricsUrl!;
    tenantValues.push(h.orgId, h.apiKey, 'acme');
  }, 300_000);
  afterAll(async () => {
    await h?.server.close();
    await receiver?.close();
  });

  it('metrics: the listener is its own; /metrics on the API port is 404 route_not_found', async () => {
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    expect(new URL(url).port).not.toBe(new URL(h.server.url).port);
    const onApi = await request(`${h.server.url}/metrics`, 'GET');
    expect(onApi.status).toBe(404);
    expect(onApi.body.code).toBe('route_not_found');
    const elsewhere = await fetch(url.replace(/\/metrics$/, '/other'));
    expect(elsewhere.status).toBe(404);
  });

  it('metrics: N requests to a route count N under its template, in the counter and the histogram', async () => {
    const ids = await buildTeam(h);
    tenantValues.push(ids.teamId, ids.agentId, ids.humanId, ids.edgeId);
    const labels = { route: '/api/v1/teams/{team_id}', method: 'GET', status: '200' };
    const before = await scrape(url);
    for (let i = 0; i < 7; i++) expect((await h.call('GET', `/api/v1/teams/${ids.teamId}`)).status).toBe(200);
    const unknown = await h.call('GET', `/api/v1/no-such-route/${ids.teamId}`);
    expect(unknown.status).toBe(404);
    const after = await scrape(url);
    expect(after.value('acs_http_requests_total', labels) - before.value('acs_http_requests_total', labels)).toBe(7);
    const timed = { route: '/api/v1/teams/{team_id}', method: 'GET' };
    expect(after.value('acs_http_request_duration_seconds_count', timed) - before.value('acs_http_request_duration_seconds_count', timed)).toBe(7);
    expect(after.value('acs_http_request_duration_seconds_bucket', { ...timed, le: '+Inf' }) - before.value('acs_http_request_duration_seconds_bucket', { ...timed, le: '+Inf' })).toBe(7);
    // A path no route takes is one label value, whatever it held.
    const unmatched = { route: 'unmatched', method: 'GET', status: '404' };
    expect(after.value('acs_http_requests_total', unmatched) - before.value('acs_http_requests_total', unmatched)).toBe(1);
    expect(after.family('acs_http_requests')?.type).toBe('counter');
    expect(after.family('acs_http_request_duration_seconds')?.type).toBe('histogram');
  });

  it('metrics: Node\'s process metrics are there, and OpenMetrics (when asked for) carries the same values as the text format', async () => {
    const open = await scrape(url, { openMetrics: true });
    expect(open.contentType).toMatch(/^application\/openmetrics-text; version=1\.0\.0/);
    expect(open.text.endsWith('# EOF\n')).toBe(true);
    const text = await scrape(url);
    expect(text.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    for (const name of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_heap_size_used_bytes', 'nodejs_eventloop_lag_seconds']) {
      expect(text.has(name), name).toBe(true);
    }
    const labels = { route: '/api/v1/teams/{team_id}', method: 'GET', status: '200' };
    expect(open.value('acs_http_requests_total', labels)).toBe(7);
    // An OpenMetrics scrape leaves the text format's counter names as they were (with _total).
    expect(text.value('acs_http_requests_total', labels)).toBe(7);
    expect(text.text).toMatch(/^acs_http_requests_total\{/m);
  });

  it('metrics: a held long poll shows in acs_held_waits{kind="thread_poll"} while it waits and leaves it when answered', async () => {
    const ids = await buildTeam(h);
    tenantValues.push(ids.teamId);
    const opened = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'first' });
    expect(opened.status).toBe(201);
    const threadId: string = opened.body.thread_id;
    const page = await h.call('GET', `/api/v1/threads/${threadId}`);
    const last = page.body.messages.at(-1).message_id;
    expect((await scrape(url)).value('acs_held_waits', { kind: 'thread_poll' })).toBe(0);
    const poll = h.call('GET', `/api/v1/threads/${threadId}?after=${last}&wait=30`);
    await scrapeUntil(url, (s) => s.value('acs_held_waits', { kind: 'thread_poll' }) === 1, 'the long poll in the gauge');
    expect((await h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: ids.humanId, content: 'second' })).status).toBe(201);
    const answered = await poll;
    expect(answered.body.messages.map((m: { content: string }) => m.content)).toEqual(['second']);
    // The place is given back before the answer is sent.
    const after = await scrape(url);
    expect(after.value('acs_held_waits', { kind: 'thread_poll' })).toBe(0);
    expect(after.value('acs_held_waits')).toBe(0);
  });

  it('metrics: events are counted by type once numbered: three teams created count three team.created', async () => {
    const before = await scrape(url);
    for (let i = 0; i < 3; i++) {
      const team = await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: `metrics-${i}` });
      expect(team.status).toBe(201);
      tenantValues.push(team.body.team_id, `metrics-${i}`);
    }
    const was = before.value('acs_events_written_total', { type: 'team.created' });
    const after = await scrapeUntil(url, (s) => s.value('acs_events_written_total', { type: 'team.created' }) >= was + 3, 'three team.created events');
    expect(after.value('acs_events_written_total', { type: 'team.created' }) - was).toBe(3);
  });

  it('metrics: a delivered webhook counts once, with its duration, and nothing stays pending', async () => {
    const hook = await h.call('POST', `/api/v1/organizations/${h.orgId}/webhooks`, { url: receiver.url, events: ['team.created'] });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    const before = await scrape(url);
    const team = await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'metrics-hooked' });
    tenantValues.push(team.body.team_id, hook.body.webhook_id);
    await receiver.waitFor(1);
    const delivered = (s: Awaited<ReturnType<typeof scrape>>) => s.value('acs_webhook_deliveries_total', { outcome: 'delivered' }) - before.value('acs_webhook_deliveries_total', { outcome: 'delivered' });
    const after = await scrapeUntil(url, (s) => delivered(s) >= 1, 'the delivery recorded');
    expect(delivered(after)).toBe(1);
    expect(after.value('acs_webhook_deliveries_total') - before.value('acs_webhook_deliveries_total')).toBe(1);
    expect(after.value('acs_webhook_delivery_duration_seconds_count') - before.value('acs_webhook_delivery_duration_seconds_count')).toBe(1);
    expect(after.value('acs_webhook_deliveries_pending')).toBe(0);
    expect(receiver.received).toHaveLength(1);
    expect((await h.call('DELETE', `/api/v1/webhooks/${hook.body.webhook_id}`)).status).toBe(200);
  });

  it('metrics: an echo reply counts one turn replied, with its duration and the tokens the usage API records', async () => {
    expect((await h.call('PUT', `/api/v1/organizations/${h.orgId}/api-keys/echo`, { api_key: 'echo-key' })).status).toBe(200);
    const team = await makeTeam(h, { humans: ['ann'], agents: [{ name: 'bot', provider: 'echo' }], edges: [['ann', 'bot']] });
    tenantValues.push(team.teamId, team.id.bot!, team.id.ann!);
    const before = await scrape(url);
    const threadId = await openThread(h, team.edgeOf('ann', 'bot'), team.id.ann!, 'hello');
    await waitForThread(h, threadId, (ms) => ms.some((m) => m.content === 'echo: hello'));
    const replied = (s: Awaited<ReturnType<typeof scrape>>) =>
      s.value('acs_agent_turns_total', { provider: 'echo', outcome: 'replied' }) - before.value('acs_agent_turns_total', { provider: 'echo', outcome: 'replied' });
    const after = await scrapeUntil(url, (s) => replied(s) >= 1, 'the echo turn counted');
    expect(replied(after)).toBe(1);
    expect(after.value('acs_agent_turns_total') - before.value('acs_agent_turns_total')).toBe(1);
    expect(after.value('acs_agent_turn_duration_seconds_count', { provider: 'echo' }) - before.value('acs_agent_turn_duration_seconds_count', { provider: 'echo' })).toBe(1);
    const usage = (await h.call('GET', `/api/v1/agents/${team.id.bot}/usage`)).body;
    expect(usage.input_tokens).toBeGreaterThan(0);
    for (const [kind, tokens] of [['input', usage.input_tokens], ['output', usage.output_tokens]] as const) {
      expect(after.value('acs_provider_tokens_total', { provider: 'echo', kind }) - before.value('acs_provider_tokens_total', { provider: 'echo', kind })).toBe(tokens);
    }
  });

  it('metrics: an echo agent with team tools answering "call whoami" counts one team tool call completed and one turn replied', async () => {
    const team = await makeTeam(h, { humans: ['ann'], agents: [{ name: 'doer', provider: 'echo', tools: { team: true } }], edges: [['ann', 'doer']] });
    tenantValues.push(team.teamId, team.id.doer!);
    const before = await scrape(url);
    const threadId = await openThread(h, team.edgeOf('ann', 'doer'), team.id.ann!, 'call whoami');
    await waitForThread(h, threadId, (ms) => ms.some((m) => m.sender_id === team.id.doer));
    const calls = await toolCalls(h, threadId);
    expect(calls.map((c) => [c.tool, c.server, c.status])).toEqual([['whoami', null, 'completed']]);
    const delta = (s: Awaited<ReturnType<typeof scrape>>, name: string, labels: Record<string, string>) => s.value(name, labels) - before.value(name, labels);
    const after = await scrapeUntil(
      url,
      (s) => delta(s, 'acs_tool_calls_total', { server: 'team', outcome: 'completed' }) >= 1 && delta(s, 'acs_agent_turns_total', { provider: 'echo', outcome: 'replied' }) >= 1,
      'the tool call and the turn counted',
    );
    expect(delta(after, 'acs_tool_calls_total', {})).toBe(1);
    expect(delta(after, 'acs_tool_calls_total', { server: 'team', outcome: 'completed' })).toBe(1);
    expect(delta(after, 'acs_agent_turns_total', {})).toBe(1);
    expect(delta(after, 'acs_agent_turns_total', { provider: 'echo', outcome: 'replied' })).toBe(1);
    // Two steps (the call, then the reply): both steps' tokens, as the usage API records them.
    const usage = (await h.call('GET', `/api/v1/agents/${team.id.doer}/usage`)).body;
    expect(usage.calls).toBe(2);
    expect(delta(after, 'acs_provider_tokens_total', { provider: 'echo', kind: 'output' })).toBe(usage.output_tokens);
    expect(delta(after, 'acs_provider_tokens_total', { provider: 'echo', kind: 'input' })).toBe(usage.input_tokens);
  });

  it('metrics: no label value is an id, a key or a name the traffic carried', async () => {
    const scraped = await scrape(url);
    const values = new Set(scraped.families.flatMap((f) => f.samples.flatMap((s) => Object.values(s.labels))));
    for (const value of tenantValues) expect(values.has(value), value).toBe(false);
    for (const value of tenantValues) expect(scraped.text.includes(value), value).toBe(false);
    // Every route label is a template of the API or `unmatched`.
    const routes = new Set(scraped.families.flatMap((f) => f.samples.map((s) => s.labels.route).filter((r): r is string => r !== undefined)));
    for (const route of routes) expect(route, route).toMatch(/^(unmatched|\/[a-z0-9_\-/{}.*]*)$/);
  });
});

describeWithParser('metrics of acs-server: the database pool', () => {
  let h: Harness & { db: Db };
  beforeAll(async () => {
    await installParser();
    h = await startHarnessWithDb('acme', { options: { metricsListen: local } });
  }, 300_000);
  afterAll(async () => {
    await h?.server.close();
  });

  it(`metrics: the database pool's gauge is ${postgresBackend ? 'there on PostgreSQL: three transactions held open are three connections in use' : 'absent on PGlite, which has no pool'}`, async () => {
    const url = h.server.metricsUrl!;
    if (!postgresBackend) {
      expect((await scrape(url)).has('acs_db_pool_connections')).toBe(false);
      return;
    }
    const inUse = (s: Awaited<ReturnType<typeof scrape>>) => s.value('acs_db_pool_connections', { state: 'total' }) - s.value('acs_db_pool_connections', { state: 'idle' });
    const held = await Promise.all([0, 1, 2].map(() => holdLocks(h.db, 'SELECT 1', [])));
    const during = await scrape(url);
    expect(inUse(during)).toBeGreaterThanOrEqual(3);
    expect(during.value('acs_db_pool_connections', { state: 'total' })).toBeLessThanOrEqual(10);
    expect(during.value('acs_db_pool_connections', { state: 'waiting' })).toBeGreaterThanOrEqual(0);
    for (const hold of held) await hold.release();
    const after = await scrapeUntil(url, (s) => inUse(s) <= inUse(during) - 3, 'the three connections given back');
    expect(after.value('acs_db_pool_connections', { state: 'idle' })).toBeGreaterThanOrEqual(3);
  });
});

describeWithParser('metrics of acs-server: refusals', () => {
  let h: Harness;
  let url: string;
  beforeAll(async () => {
    await installParser();
    h = await startHarness({ inMemory: true, metricsListen: local, rateLimit: { max: 12, windowMs: 60_000, repeatDelayMs: 0 }, heldWaits: { perKey: 1, perOrg: 2 } });
    url = h.server.metricsUrl!;
  }, 300_000);
  afterAll(async () => {
    await h?.server.close();
  });

  it('metrics: a wait past the key\'s bound counts in acs_held_waits_refused_total{reason="per_key"}, and each rate-limit refusal in acs_rate_limited_total', async () => {
    const ids = await buildTeam(h);
    const opened = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'first' });
    const threadId: string = opened.body.thread_id;
    const last = (await h.call('GET', `/api/v1/threads/${threadId}`)).body.messages.at(-1).message_id;
    const held = h.call('GET', `/api/v1/threads/${threadId}?after=${last}&wait=30`);
    await scrapeUntil(url, (s) => s.value('acs_held_waits', { kind: 'thread_poll' }) === 1, 'the first long poll held');
    const refused = await h.call('GET', `/api/v1/threads/${threadId}?after=${last}&wait=30`);
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('too_many_waits');
    // A message answers the held poll.
    expect((await h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: ids.humanId, content: 'second' })).status).toBe(201);
    expect((await held).status).toBe(200);
    const waits = await scrape(url);
    expect(waits.value('acs_held_waits_refused_total', { reason: 'per_key' })).toBe(1);
    expect(waits.value('acs_held_waits_refused_total', { reason: 'per_process' })).toBe(0);
    expect(waits.value('acs_held_waits_refused_total', { reason: 'per_org' })).toBe(0);

    // Past the rate limit: every refusal the client saw, and no other request, is counted.
    const answers = [];
    for (let i = 0; i < 8; i++) answers.push(await h.call('GET', `/api/v1/teams/${ids.teamId}`));
    const limited = answers.filter((a) => a.status === 429 && a.body.code === 'rate_limited').length;
    expect(limited).toBeGreaterThan(0);
    const after = await scrape(url);
    expect(after.value('acs_rate_limited_total')).toBe(limited);
    expect(after.value('acs_http_requests_total', { status: '429' })).toBe(limited + 1);
  });
  it('metrics: a wait past its organization\'s bound counts in acs_held_waits_refused_total{reason="per_org"}', async () => {
    const org = await h.server.provisionOrganization(`per-org-${crypto.randomUUID().slice(0, 8)}`);
    const as = (key: string) => (method: string, path: string, body?: unknown) => request(`${h.server.url}${path}`, method, body, { 'x-api-key': key });
    const first = as(org.api_key);
    const keys = [org.api_key];
    for (const name of ['second', 'third']) keys.push((await first('POST', `/api/v1/organizations/${org.org_id}/keys`, { name })).body.api_key);
    const team = (await first('POST', `/api/v1/organizations/${org.org_id}/teams`, { team_name: 't' })).body.team_id;
    const [ann, bob] = [(await first('POST', `/api/v1/teams/${team}/humans`, { name: 'ann' })).body.human_id, (await first('POST', `/api/v1/teams/${team}/humans`, { name: 'bob' })).body.human_id];
    const edge = (await first('POST', `/api/v1/teams/${team}/edges`, { participants: [ann, bob] })).body.edge_id;
    const thread = (await first('POST', `/api/v1/edges/${edge}/threads`, { sender_agent_id: ann, content: 'first' })).body.thread_id;
    const last = (await first('GET', `/api/v1/threads/${thread}`)).body.next_after;
    const before = (await scrape(url)).value('acs_held_waits_refused_total', { reason: 'per_org' });
    // Two keys of the organization hold one poll each (one each is their keys' bound): its bound of 2.
    const held = [as(keys[0]!)('GET', `/api/v1/threads/${thread}?after=${last}&wait=30`), as(keys[1]!)('GET', `/api/v1/threads/${thread}?after=${last}&wait=30`)];
    await scrapeUntil(url, (s) => s.value('acs_held_waits', { kind: 'thread_poll' }) === 2, 'both long polls held');
    const refused = await as(keys[2]!)('GET', `/api/v1/threads/${thread}?after=${last}&wait=30`);
    expect([refused.status, refused.body.code]).toEqual([429, 'too_many_waits']);
    expect((await first('POST', `/api/v1/threads/${thread}/messages`, { sender_agent_id: bob, content: 'second' })).status).toBe(201);
    for (const reply of await Promise.all(held)) expect(reply.status).toBe(200);
    expect((await scrape(url)).value('acs_held_waits_refused_total', { reason: 'per_org' })).toBe(before + 1);
  });
});
