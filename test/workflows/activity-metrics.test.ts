/**
 * The counters `teamctl worker --metrics-listen` serves from its activities (issue 42;
 * docs/temporal.md, "Metrics"), on a worker's registry (worker/metrics.ts) and a real acs-server:
 * each change of `runSteps` once its retries ended, by kind and outcome; each pipeline step
 * activity by kind and how it ended. Read back through Prometheus's own parser, in both formats.
 * The worker process on a real Temporal server: worker-metrics.long.test.ts.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApplyActivities, type Step } from '../../activities/apply-activities.ts';
import { createConversationActivities } from '../../activities/conversation-activities.ts';
import { startServer } from '../../service/index.ts';
import { createWorkerMetrics, type WorkerMetrics } from '../../worker/metrics.ts';
import { describeWithParser, installParser, parseExposition } from '../support/prometheus.ts';

/** The value of `teamctl_…_total` with exactly these labels in what `metrics` exposes (0 when absent), read by the parser. */
async function counted(metrics: WorkerMetrics, name: string, labels: Record<string, string>, format: 'text' | 'openmetrics' = 'text'): Promise<number> {
  const exposition = await metrics.expose(format === 'openmetrics' ? 'application/openmetrics-text; version=1.0.0' : undefined);
  const families = await parseExposition(exposition.body, format);
  const samples = families.flatMap((f) => f.samples).filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return samples.reduce((sum, s) => sum + Number(s.value), 0);
}

describeWithParser('worker metrics: what the activities count', () => {
  let server: Awaited<ReturnType<typeof startServer>>;
  let env: NodeJS.ProcessEnv;
  let orgId: string;
  const connection = () => ({ baseUrl: server.url, apiKeyEnv: 'ACS_TEST_KEY' });

  beforeAll(async () => {
    await installParser();
    server = await startServer({ inMemory: true, port: 0, tickMs: 20, logger: false, rateLimit: false });
    const org = await server.provisionOrganization('worker-metrics');
    orgId = org.org_id;
    env = { ACS_TEST_KEY: org.api_key };
  }, 300_000);
  afterAll(async () => {
    await server?.close();
  });

  it('worker metrics: runSteps counts each change once by kind and outcome, and a change whose retries are spent as failed', async () => {
    const metrics = createWorkerMetrics();
    const acts = createApplyActivities({ env, metrics });
    const team = { op: 'ensure' as const, input: { connection: connection(), kind: 'team' as const, parentId: orgId, fields: { team_name: 'counted', description: '', deletion_protection: false } } };
    const agent = (name: string): Step => ({ op: 'ensure', input: { connection: connection(), kind: 'agent', parentId: { resultOf: 0 } as unknown as string, fields: { name } as never } });
    await acts.runSteps({ steps: [team, agent('ann'), agent('bob')] });
    // The same batch again adopts what is there: unchanged, counted as such.
    await acts.runSteps({ steps: [team, agent('ann')] });
    const missing: Step = { op: 'ensure', input: { connection: connection(), kind: 'human', parentId: '00000000-0000-4000-8000-000000000000', fields: { name: 'nobody' } as never } };
    await expect(acts.runSteps({ steps: [missing], maximumAttempts: 1 })).rejects.toMatchObject({ type: 'not_found' });

    expect(await counted(metrics, 'teamctl_apply_changes_total', { kind: 'team', outcome: 'created' })).toBe(1);
    expect(await counted(metrics, 'teamctl_apply_changes_total', { kind: 'agent', outcome: 'created' })).toBe(2);
    expect(await counted(metrics, 'teamctl_apply_changes_total', { kind: 'team', outcome: 'unchanged' })).toBe(1);
    expect(await counted(metrics, 'teamctl_apply_changes_total', { kind: 'agent', outcome: 'unchanged' })).toBe(1);
    expect(await counted(metrics, 'teamctl_apply_changes_total', { kind: 'human', outcome: 'failed' })).toBe(1);
    expect(await counted(metrics, 'teamctl_apply_changes_total', {})).toBe(6);
    expect(await counted(metrics, 'teamctl_apply_changes_total', {}, 'openmetrics')).toBe(6);
  });

  it('worker metrics: pipeline step activities count by kind and how they ended: replied, sent, waiting, timed_out, failed', async () => {
    const call = (method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> =>
      fetch(`${server.url}/api/v1${path}`, { method, headers: { 'x-api-key': String(env.ACS_TEST_KEY), 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) }).then(async (r) => ({ status: r.status, body: await r.json() }));
    expect((await call('PUT', `/organizations/${orgId}/api-keys/echo`, { api_key: 'echo-key' })).status).toBe(200);
    const team = (await call('POST', `/organizations/${orgId}/teams`, { team_name: 'steps' })).body.team_id;
    const ann = (await call('POST', `/teams/${team}/humans`, { name: 'ann' })).body.human_id;
    const dan = (await call('POST', `/teams/${team}/humans`, { name: 'dan' })).body.human_id;
    const bot = (await call('POST', `/teams/${team}/agents`, { name: 'bot', provider: 'echo' })).body.agent_id;
    const toBot = (await call('POST', `/teams/${team}/edges`, { participants: [ann, bot] })).body.edge_id;
    const toDan = (await call('POST', `/teams/${team}/edges`, { participants: [ann, dan] })).body.edge_id;

    const metrics = createWorkerMetrics();
    const acts = createConversationActivities({ env, metrics });
    const step = (stepId: string, edgeId: string, extra: Record<string, unknown> = {}) => ({ connection: connection(), runKey: 'metrics-run', stepId, target: { edgeId }, senderId: ann, content: `step ${stepId}`, ...extra });

    // converse: the echo agent's reply comes by long poll.
    const replied = await acts.converse(step('ask-bot', toBot, { awaitFromId: bot, deadline: Date.now() + 30_000 }));
    expect(replied.reply?.content).toBe('echo: step ask-bot');
    // converse: a message that awaits nothing.
    await acts.converse(step('tell-dan', toDan));
    // converse: dan never answers before the deadline.
    await expect(acts.converse(step('ask-dan', toDan, { awaitFromId: dan, deadline: Date.now() + 300 }))).rejects.toMatchObject({ type: 'timed_out' });
    // converse: an edge that does not exist.
    await expect(acts.converse(step('nowhere', '00000000-0000-4000-8000-000000000000'))).rejects.toMatchObject({ type: 'not_found' });
    // send (push waits): the message goes out; dan has not answered.
    const sent = await acts.sendStep(step('push-dan', toDan, { awaitFromId: dan }));
    expect(sent.reply).toBeNull();
    // read_reply: nothing from dan yet, then the echo's reply to the first step.
    expect(await acts.readReply({ connection: connection(), threadId: sent.threadId, after: sent.messageId, fromId: dan })).toBeNull();
    expect(await acts.readReply({ connection: connection(), threadId: replied.threadId, after: replied.messageId, fromId: bot })).not.toBeNull();

    const expected: Array<[string, string, number]> = [
      ['converse', 'replied', 1],
      ['converse', 'sent', 1],
      ['converse', 'timed_out', 1],
      ['converse', 'failed', 1],
      ['send', 'sent', 1],
      ['read_reply', 'waiting', 1],
      ['read_reply', 'replied', 1],
    ];
    for (const [kind, outcome, count] of expected) expect(await counted(metrics, 'teamctl_pipeline_steps_total', { kind, outcome }), `${kind} ${outcome}`).toBe(count);
    expect(await counted(metrics, 'teamctl_pipeline_steps_total', {})).toBe(7);
  });
});
