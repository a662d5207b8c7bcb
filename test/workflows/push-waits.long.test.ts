/**
 * Waits that hold nothing (issue 19), on a real Temporal server and a real acs-server whose
 * webhook points at the worker's events listener: a step waits in the workflow (no activity),
 * woken by the webhook's delivery; a re-ask waits again; a listener that is down delays but loses
 * nothing (the webhook retries); without deliveries the reconcile read finds the reply; timeouts
 * and cancellation end a push wait as they end a poll; a run on an organization without a
 * webhook polls; `runs show` says which.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AcsClient } from '../../client/acs-client.ts';
import { runCli } from '../../cli/program.ts';
import { loadDefinitionFile } from '../../definitions/load.ts';
import type { Definition } from '../../definitions/schema.ts';
import { describePipelineRun, newRunId, startPipelineRun } from '../../engine/temporal-runs.ts';
import { startServer } from '../../service/index.ts';
import type { PipelineProgress, PipelineResult, PipelineRunInput } from '../../workflows/pipeline-orchestration.ts';
import { progressQuery } from '../../workflows/pipeline-workflow.ts';
import { createWorker } from '../../worker/worker.ts';
import { connectTestClient, describeTemporal, spawnWorker, testSettings } from '../support/temporal.ts';

const ECHO_KEY = 'push-waits-echo-provider-secret-51c9';
const SECRET = `whsec_${Buffer.alloc(32, 0x5e).toString('base64')}`;
const example = new URL('../../examples/triage.yaml', import.meta.url);

describeTemporal('push waits', () => {
  let server: Awaited<ReturnType<typeof startServer>>;
  let temporal: Client;
  let closeTemporal: (() => Promise<void>) | undefined;
  const stops: Array<() => Promise<void>> = [];

  /** A free loopback port (for a listener whose URL the webhook names before the worker starts). */
  async function freePort(): Promise<number> {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as { port: number };
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    return port;
  }
  const urlOf = (port: number) => `http://127.0.0.1:${port}/`;

  /** A worker on its own task queue with its events listener on `port`; `stop()` ends both. */
  async function worker(taskQueue: string, env: Record<string, string>, port: number) {
    const created = await createWorker(testSettings(), { taskQueue, activityDeps: { env }, eventsListener: { host: '127.0.0.1', port, secrets: [SECRET] } });
    const running = created.run();
    let stopped = false;
    const stop = async () => {
      if (stopped) return;
      stopped = true;
      created.worker.shutdown();
      await running;
    };
    stops.push(stop);
    return { url: created.listener!.url, port: created.listener!.port, searchAttribute: created.searchAttribute, stop };
  }

  /**
   * An organization of its own with the example's team and pipelines and, when `webhookUrl` is
   * given, a webhook for message.created pointing there. `extra` is appended to the approval
   * pipeline's keys (waitMode, reconcileEvery).
   */
  async function organization(webhookUrl: string | undefined, approvalExtra = '') {
    const name = `push-${randomUUID()}`;
    const { api_key: apiKey } = await server.provisionOrganization(name);
    let text = (await readFile(example, 'utf8')).split('\nschedules:')[0]!.replace('name: acme-support', `name: ${name}`);
    if (webhookUrl) text = text.replace('  providerKeys:', `  webhooks:\n    - name: teamctl-waits\n      url: ${webhookUrl}\n      events: [message.created]\n      secret: \${env:WAITS_SECRET}\n  providerKeys:`);
    if (approvalExtra) text = text.replace('    output: "{{ steps.ask.value }}"', `    output: "{{ steps.ask.value }}"\n${approvalExtra}`);
    const file = join(await mkdtemp(join(tmpdir(), 'teamctl-push-')), 'triage.yaml');
    await writeFile(file, text);
    const env = { ACS_API_KEY: apiKey, ECHO_PROVIDER_KEY: ECHO_KEY, WAITS_SECRET: SECRET };
    const out: string[] = [];
    const code = await runCli(['apply', '-f', file], { env: { ...process.env, ...env, ACS_BASE_URL: server.url }, isTTY: false, stdout: (t) => void out.push(t), stderr: (t) => void out.push(t) });
    expect(code, out.join('\n')).toBe(0);
    const client = new AcsClient({ baseUrl: server.url, apiKey });
    const org = (await client.listOrganizations()).find((o) => o.org_name === name)!;
    const team = (await client.listTeams(org.org_id)).find((t) => t.team_name === 'intake')!;
    const graph = await client.getTeam(team.team_id);
    const people = Object.fromEntries([...graph.agents.map((a) => [a.name, a.agent_id]), ...graph.humans.map((h) => [h.name, h.human_id])]) as Record<string, string>;
    const definition: Definition = await loadDefinitionFile(file);
    return { name, env, client, people, orgId: org.org_id, definition };
  }

  function approval(org: Awaited<ReturnType<typeof organization>>, extra: Partial<PipelineRunInput> = {}): PipelineRunInput {
    return {
      connection: { baseUrl: server.url, apiKeyEnv: 'ACS_API_KEY' },
      organization: org.name,
      pipeline: org.definition.pipelines.find((p) => p.name === 'approval')!,
      inputs: { change: 'v2' },
      ...extra,
    };
  }

  /** Polls the run's `progress` query until `ready` holds. */
  async function progressUntil(runId: string, ready: (p: PipelineProgress) => boolean, ms = 120_000): Promise<PipelineProgress> {
    const deadline = Date.now() + ms;
    for (;;) {
      const progress = await temporal.workflow.getHandle(runId).query(progressQuery).catch(() => undefined);
      if (progress && ready(progress)) return progress;
      if (Date.now() > deadline) throw new Error(`run ${runId} never reached the expected state: ${JSON.stringify(progress)}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  /** Starts an approval run and waits until its first step waits (its thread known). */
  async function waitingRun(org: Awaited<ReturnType<typeof organization>>, taskQueue: string, extra: Partial<PipelineRunInput> = {}) {
    const runId = newRunId(org.name, 'approval');
    await startPipelineRun(approval(org, extra), runId, { settings: testSettings(), taskQueue });
    const progress = await progressUntil(runId, (p) => p.steps[0]!.status === 'running' && p.steps[0]!.wait_mode !== undefined);
    // A polling step's thread is in its activity's heartbeat, which runs show reads.
    let threadId = progress.steps[0]!.thread_id;
    for (let deadline = Date.now() + 60_000; !threadId; ) {
      threadId = (await describePipelineRun(runId, { settings: testSettings(), taskQueue })).waiting[0]?.thread_id ?? null;
      if (Date.now() > deadline) throw new Error(`run ${runId} never showed its waiting step's thread`);
      if (!threadId) await new Promise((resolve) => setTimeout(resolve, 500));
    }
    return { runId, threadId, mode: progress.steps[0]!.wait_mode };
  }

  const result = (runId: string) => temporal.workflow.getHandle<(input: PipelineRunInput) => Promise<PipelineResult>>(runId).result();
  const history = async (runId: string) => (await temporal.workflow.getHandle(runId).fetchHistory()).events ?? [];
  const activityNames = (events: Awaited<ReturnType<typeof history>>) => events.flatMap((e) => (e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType!.name!] : []));

  beforeAll(async () => {
    server = await startServer({ inMemory: true, port: 0, tickMs: 100, logger: false, rateLimit: false, webhooks: { allowPrivate: true, retrySchedule: [500, 1000, 2000, 2000, 2000, 2000, 2000], pollMs: 200 } });
    ({ client: temporal, close: closeTemporal } = await connectTestClient());
  }, 120_000);

  afterAll(async () => {
    for (const stop of stops.reverse()) await stop();
    await closeTemporal?.();
    await server?.close();
  }, 120_000);

  it('push: an approval step waits in the workflow (no activity), dana\'s answer over REST wakes it through the webhook and the listener, and runs show says it waited by push', async () => {
    const taskQueue = `push-${randomUUID()}`;
    const port = await freePort();
    const org = await organization(urlOf(port));
    const w = await worker(taskQueue, org.env, port);
    expect(w.searchAttribute.ready).toBe(true);
    const { runId, threadId, mode } = await waitingRun(org, taskQueue);
    expect(mode).toBe('push');
    const shown = await describePipelineRun(runId, { settings: testSettings(), taskQueue });
    expect(shown.waiting).toMatchObject([{ step: 'ask', thread_id: threadId, to: 'dana', wait_mode: 'push' }]);
    // The question expects dana's answer; the run holds no activity while it waits.
    const description = await temporal.workflow.getHandle(runId).describe();
    expect(description.raw.pendingActivities ?? []).toEqual([]);

    await org.client.appendMessage(threadId, { sender_agent_id: org.people['dana']!, content: 'approve' });
    const done = await result(runId);
    expect(done.output).toBe('approve');
    const events = await history(runId);
    expect(activityNames(events)).toEqual(['resolveTeam']);
    expect(events.filter((e) => e.workflowExecutionSignaledEventAttributes).length).toBe(1);
    // One upsert of the awaited threads (patched() upserts TemporalChangeVersion once besides).
    const upserts = events.filter((e) => Object.keys(e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {}).includes('TeamctlAwaitingThreads'));
    expect(upserts.length).toBe(1);
    // From the send to the reply: the send's marker, the upsert, the timer, the signal, a workflow task, the timer cancelled: 8 events.
    const sent = events.findIndex((e) => e.markerRecordedEventAttributes && events.indexOf(e) > events.indexOf(upserts[0]!) - 2);
    const cancelled = events.findIndex((e) => e.timerCanceledEventAttributes);
    expect(cancelled - sent + 1).toBe(8);
    // Every message once: the question and the go-ahead, dana's answer between them.
    const contents = (await org.client.getThread(threadId, { limit: 50 })).messages.map((m) => m.content);
    expect(contents).toEqual(['May we roll out v2? Answer approve or reject in this thread.', 'approve', 'Approved: rolling out v2.']);
    await w.stop();
  }, 240_000);

  it('push: a reply that does not fit is asked again in the same thread and the re-ask waits by push too; the right answer then completes the run', async () => {
    const taskQueue = `push-${randomUUID()}`;
    const port = await freePort();
    const org = await organization(urlOf(port));
    const ready = await worker(taskQueue, org.env, port);
    const { runId, threadId } = await waitingRun(org, taskQueue);
    await org.client.appendMessage(threadId, { sender_agent_id: org.people['dana']!, content: 'maybe' });
    await progressUntil(runId, (p) => (p.steps[0]!.misfits?.length ?? 0) === 1 && p.steps[0]!.wait_mode === 'push');
    await org.client.appendMessage(threadId, { sender_agent_id: org.people['dana']!, content: 'reject' });
    expect((await result(runId)).output).toBe('reject');
    expect(activityNames(await history(runId))).toEqual(['resolveTeam']);
    await ready.stop();
  }, 240_000);

  it('push: while the listener is down the answer\'s deliveries fail; once it is back the webhook\'s retry wakes the run, and nothing is lost', async () => {
    const taskQueue = `push-${randomUUID()}`;
    const port = await freePort();
    const org = await organization(urlOf(port));
    const up = await worker(taskQueue, org.env, port);
    const { runId, threadId } = await waitingRun(org, taskQueue);
    await up.stop();
    await org.client.appendMessage(threadId, { sender_agent_id: org.people['dana']!, content: 'approve' });
    const hook = (await org.client.listWebhooks(org.orgId))[0]!;
    // At least one attempt failed while nobody listened.
    for (let deadline = Date.now() + 60_000; ; ) {
      const failed = (await org.client.listWebhookDeliveries(hook.webhook_id)).deliveries.filter((d) => d.event_type === 'message.created' && d.attempt >= 1 && d.status === 'pending');
      if (failed.length > 0) break;
      if (Date.now() > deadline) throw new Error('no delivery attempt failed while the listener was down');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const back = await worker(taskQueue, org.env, port);
    expect((await result(runId)).output).toBe('approve');
    const answered = (await org.client.listWebhookDeliveries(hook.webhook_id)).deliveries.filter((d) => d.status === 'delivered' && d.attempt > 1);
    expect(answered.length).toBeGreaterThan(0);
    await back.stop();
  }, 240_000);

  it('push: a worker killed (SIGKILL) and started again reads the event log from the last event it handled: the answer written while it was down wakes the run at once, with no delivery to bring it; --max-cached-workflows bounds its cache', async () => {
    const taskQueue = `push-${randomUUID()}`;
    const port = await freePort();
    const org = await organization(urlOf(port));
    const stateFile = join(await mkdtemp(join(tmpdir(), 'teamctl-push-state-')), 'events.json');
    const env = { ...org.env, ACS_BASE_URL: server.url, TEAMCTL_EVENTS_SECRET: SECRET };
    // A small workflow cache too: the run is replayed from its history when its answer comes.
    const args = ['--events-listen', `127.0.0.1:${port}`, '--events-state', stateFile, '--max-cached-workflows', '4'];
    const first = await spawnWorker(taskQueue, env, args);
    try {
      expect(first.output()).toContain(`its place in the event log kept in ${stateFile}`);
      expect(first.output()).toContain('caching at most 4 workflows');
      const { runId, threadId } = await waitingRun(org, taskQueue);
      // The question's delivery reached the listener, which kept its place there.
      const asked = (await org.client.listEvents(org.orgId, { types: ['message.created'] })).events.find((e) => e.type === 'message.created' && e.data.thread_id === threadId)!;
      for (let deadline = Date.now() + 60_000; ; ) {
        const kept = await readFile(stateFile, 'utf8').then((text) => JSON.parse(text).organizations[org.orgId]?.seq as number | undefined, () => undefined);
        if (kept !== undefined && kept >= asked.seq) break;
        if (Date.now() > deadline) throw new Error(`the listener never kept its place (${kept})`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(await first.kill('SIGKILL')).toBe('SIGKILL');
      // No delivery can bring the answer: the webhook is disabled (what is written meanwhile is never sent), and the reconcile read is 15 minutes away.
      const hook = (await org.client.listWebhooks(org.orgId))[0]!;
      await org.client.updateWebhook(hook.webhook_id, { status: 'disabled' });
      await org.client.appendMessage(threadId, { sender_agent_id: org.people['dana']!, content: 'approve' });
      const second = await spawnWorker(taskQueue, env, args);
      try {
        expect((await result(runId)).output).toBe('approve');
        for (let deadline = Date.now() + 30_000; !second.output().includes('event log after seq'); ) {
          if (Date.now() > deadline) break;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        expect(second.output()).toMatch(new RegExp(`teamctl worker events listener read organization ${org.orgId}'s event log after seq \\d+: \\d+ messages?, 1 passed on to waiting runs`));
        expect((await org.client.listWebhookDeliveries(hook.webhook_id)).deliveries.filter((d) => d.seq > asked.seq)).toEqual([]);
      } finally {
        await second.kill('SIGTERM');
      }
    } finally {
      await first.kill('SIGKILL').catch(() => undefined);
    }
  }, 240_000);

  it('push: with no delivery at all (the webhook disabled), the reconcile read every reconcileEvery finds the answer', async () => {
    const taskQueue = `push-${randomUUID()}`;
    const port = await freePort();
    const org = await organization(urlOf(port), '    waitMode: push\n    reconcileEvery: 10s');
    const hook = (await org.client.listWebhooks(org.orgId))[0]!;
    await org.client.updateWebhook(hook.webhook_id, { status: 'disabled' });
    const ready = await worker(taskQueue, org.env, port);
    const { runId, threadId, mode } = await waitingRun(org, taskQueue);
    expect(mode).toBe('push');
    await org.client.appendMessage(threadId, { sender_agent_id: org.people['dana']!, content: 'approve' });
    expect((await result(runId)).output).toBe('approve');
    const events = await history(runId);
    expect(events.filter((e) => e.workflowExecutionSignaledEventAttributes)).toEqual([]);
    expect(events.filter((e) => e.timerFiredEventAttributes).length).toBeGreaterThan(0);
    await ready.stop();
  }, 240_000);

  it('push: a wait that outlasts its timeout fails timed_out naming the thread; a cancelled run stops waiting at once', async () => {
    const taskQueue = `push-${randomUUID()}`;
    const port = await freePort();
    const org = await organization(urlOf(port));
    const ready = await worker(taskQueue, org.env, port);
    const pipeline = org.definition.pipelines.find((p) => p.name === 'approval')!;
    const quick = { ...pipeline, steps: pipeline.steps.map((s, i) => (i === 0 ? { ...s, timeout: '3s' } : s)) } as typeof pipeline;
    const { runId, threadId } = await waitingRun(org, taskQueue, { pipeline: quick });
    const failure = await result(runId).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    const progress = await temporal.workflow.getHandle(runId).query(progressQuery);
    expect(progress.steps[0]).toMatchObject({ status: 'failed', thread_id: threadId, error: { code: 'timed_out' } });

    const second = await waitingRun(org, taskQueue);
    await temporal.workflow.getHandle(second.runId).cancel();
    const cancelled = await result(second.runId).catch((e: unknown) => e);
    expect(cancelled).toBeInstanceOf(WorkflowFailedError);
    expect((await temporal.workflow.getHandle(second.runId).describe()).status.name).toBe('CANCELLED');
    await ready.stop();
  }, 240_000);

  it('auto: an organization without a webhook for message.created waits by poll (an activity long-polls), and runs show says so', async () => {
    const taskQueue = `push-${randomUUID()}`;
    const org = await organization(undefined);
    const w = await worker(taskQueue, org.env, await freePort());
    const { runId, threadId, mode } = await waitingRun(org, taskQueue);
    expect(mode).toBe('poll');
    await org.client.appendMessage(threadId, { sender_agent_id: org.people['dana']!, content: 'approve' });
    expect((await result(runId)).output).toBe('approve');
    expect(activityNames(await history(runId))).toEqual(['resolveTeam', 'converse']);
    await w.stop();
  }, 240_000);
});
