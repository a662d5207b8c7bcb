/**
 * Pipelines on a real Temporal server and a real acs-server with echo agents: the example
 * pipeline end to end on both engines, a human-in-the-loop step through a worker SIGKILL, key
 * rotation during a wait, every key refused, cancellation, continue-as-new, and no secret in a
 * history.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Message } from '../../api/schemas.ts';
import { AcsClient } from '../../client/acs-client.ts';
import { runCli } from '../../cli/program.ts';
import { loadDefinitionFile } from '../../definitions/load.ts';
import type { Definition } from '../../definitions/schema.ts';
import { newRunId, startPipelineRun } from '../../engine/temporal-runs.ts';
import { startServer } from '../../service/index.ts';
import type { PipelineProgress, PipelineResult, PipelineRunInput } from '../../workflows/pipeline-orchestration.ts';
import { progressQuery } from '../../workflows/pipeline-workflow.ts';
import { connectTestClient, describeTemporal, historyText, spawnWorker, startWorker, testSettings } from '../support/temporal.ts';

const ECHO_KEY = 'pipeline-echo-provider-secret-7c41';
const example = new URL('../../examples/triage.yaml', import.meta.url);

describeTemporal('pipelines', () => {
  let server: Awaited<ReturnType<typeof startServer>>;
  let temporal: Client;
  let closeTemporal: (() => Promise<void>) | undefined;
  const stops: Array<() => Promise<void>> = [];

  /** An organization of its own with the example applied (schedules left out: they are tested elsewhere). */
  async function organization(): Promise<{ name: string; file: string; apiKey: string; client: AcsClient; env: Record<string, string>; definition: Definition }> {
    const name = `pipelines-${randomUUID()}`;
    const { api_key: apiKey } = await server.provisionOrganization(name);
    const text = (await readFile(example, 'utf8')).split('\nschedules:')[0]!.replace('name: acme-support', `name: ${name}`);
    const file = join(await mkdtemp(join(tmpdir(), 'teamctl-pipelines-')), 'triage.yaml');
    await writeFile(file, text);
    const env = { ACS_API_KEY: apiKey, ECHO_PROVIDER_KEY: ECHO_KEY };
    const out: string[] = [];
    const code = await runCli(['apply', '-f', file], cliIo(env, out));
    expect(code, out.join('\n')).toBe(0);
    return { name, file, apiKey, env, client: new AcsClient({ baseUrl: server.url, apiKey }), definition: await loadDefinitionFile(file) };
  }

  function cliIo(env: Record<string, string>, out: string[]) {
    return { env: { ...process.env, ...env, ACS_BASE_URL: server.url }, isTTY: false, stdout: (t: string) => void out.push(t), stderr: (t: string) => void out.push(t) };
  }

  async function queueWithWorker(env: Record<string, string | undefined>): Promise<string> {
    const taskQueue = `pipelines-test-${randomUUID()}`;
    const worker = await startWorker(taskQueue, { env });
    stops.push(() => worker.stop());
    return taskQueue;
  }

  /** Every message of a thread. */
  async function messages(client: AcsClient, threadId: string): Promise<Message[]> {
    return (await client.getThread(threadId, { limit: 200 })).messages;
  }

  /** The participant ids of the example team by name. */
  async function ids(client: AcsClient, orgName: string): Promise<Record<string, string>> {
    const org = (await client.listOrganizations()).find((o) => o.org_name === orgName)!;
    const team = (await client.listTeams(org.org_id)).find((t) => t.team_name === 'intake')!;
    const graph = await client.getTeam(team.team_id);
    return Object.fromEntries([...graph.agents.map((a) => [a.name, a.agent_id]), ...graph.humans.map((h) => [h.name, h.human_id])]);
  }

  /** Every thread of the example team, over all its edges. */
  async function threads(client: AcsClient, orgName: string) {
    const org = (await client.listOrganizations()).find((o) => o.org_name === orgName)!;
    const team = (await client.listTeams(org.org_id)).find((t) => t.team_name === 'intake')!;
    const graph = await client.getTeam(team.team_id);
    return (await Promise.all(graph.edges.map((e) => client.listThreads(e.edge_id)))).flat();
  }

  /** The id of the first thread of the team, once the pipeline has opened it. */
  async function firstThread(client: AcsClient, orgName: string): Promise<string> {
    for (;;) {
      const [thread] = await threads(client, orgName);
      if (thread) return thread.thread_id;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** Polls the run's `progress` query until `ready` holds (the workflow answers from its current state). */
  async function progressUntil(runId: string, ready: (p: PipelineProgress) => boolean): Promise<PipelineProgress> {
    for (;;) {
      const progress = await temporal.workflow.getHandle(runId).query(progressQuery).catch(() => undefined);
      if (progress && ready(progress)) return progress;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  function approvalInput(org: Awaited<ReturnType<typeof organization>>, extra: Partial<PipelineRunInput> = {}): PipelineRunInput {
    return {
      connection: { baseUrl: server.url, apiKeyEnv: 'ACS_API_KEY', apiKeyEnvFallbacks: ['ACS_API_KEY_NEXT'] },
      organization: org.name,
      pipeline: org.definition.pipelines.find((p) => p.name === 'approval')!,
      inputs: { change: 'v2' },
      ...extra,
    };
  }

  /** Checks the triage pipeline's result against the service: each step's message sent once, replies as returned. */
  async function checkTriage(org: Awaited<ReturnType<typeof organization>>, result: { output: string | null; steps: PipelineResult['steps'] }, ticket: string): Promise<void> {
    const byId = Object.fromEntries(result.steps.map((s) => [s.id, s]));
    expect(result.steps.map((s) => s.id)).toEqual(['classify', 'follow-up', 'summary', 'notify']);
    expect(byId['classify']!.reply).toBe(`echo: Classify (normal): ${ticket}`);
    // The follow-up continued the classify thread and awaited the triager there.
    expect(byId['follow-up']!.thread_id).toBe(byId['classify']!.thread_id);
    expect(byId['follow-up']!.reply).toBe(`echo: And the root cause of echo: Classify (normal): ${ticket}?`);
    expect(byId['summary']!.reply).toBe(`echo: Summarize: ${byId['follow-up']!.reply}`);
    expect(byId['notify']!.reply).toBeNull();
    expect(result.output).toBe(byId['summary']!.reply);
    const people = await ids(org.client, org.name);
    const fromDana = async (threadId: string) => (await messages(org.client, threadId)).filter((m) => m.sender_id === people['dana']).map((m) => m.content);
    expect(await fromDana(byId['classify']!.thread_id!)).toEqual([`Classify (normal): ${ticket}`, `And the root cause of echo: Classify (normal): ${ticket}?`]);
    expect(await fromDana(byId['summary']!.thread_id!)).toEqual([`Summarize: ${byId['follow-up']!.reply}`]);
    expect(await fromDana(byId['notify']!.thread_id!)).toEqual([`FYI ${ticket}`]);
  }

  beforeAll(async () => {
    // Echo agents reply on the agent loop's tick.
    server = await startServer({ inMemory: true, port: 0, tickMs: 100, logger: false, rateLimit: false });
    ({ client: temporal, close: closeTemporal } = await connectTestClient());
  }, 120_000);

  afterAll(async () => {
    for (const stop of stops.reverse()) await stop();
    await closeTemporal?.();
    await server?.close();
  }, 120_000);

  it('run: the triage pipeline completes on the local engine, with a continued thread and a parallel group, each message sent once', async () => {
    const org = await organization();
    const out: string[] = [];
    const code = await runCli(['run', 'triage', '-f', org.file, '--input', 'ticket=T-1', '--json'], cliIo(org.env, out));
    expect(code, out.join('\n')).toBe(0);
    const result = JSON.parse(out.join('\n')) as PipelineResult & { run_id: string };
    expect(result.status).toBe('completed');
    await checkTriage(org, result, 'T-1');
  });

  it('run --engine temporal: the triage pipeline completes the same way, runs show and list report it, and no secret is in its history', async () => {
    const org = await organization();
    const taskQueue = await queueWithWorker(org.env);
    const out: string[] = [];
    const code = await runCli(['run', 'triage', '-f', org.file, '--input', 'ticket=T-2', '--engine', 'temporal', '--task-queue', taskQueue, '--json'], cliIo(org.env, out));
    expect(code, out.join('\n')).toBe(0);
    const result = JSON.parse(out.join('\n')) as PipelineResult & { run_id: string };
    expect(result.status).toBe('completed');
    expect(result.run_id.startsWith(`teamctl-run/${org.name}/triage/`)).toBe(true);
    await checkTriage(org, result, 'T-2');

    out.length = 0;
    expect(await runCli(['runs', 'show', result.run_id, '--json'], cliIo(org.env, out))).toBe(0);
    const shown = JSON.parse(out.join('\n'));
    expect(shown).toMatchObject({ run_id: result.run_id, status: 'completed', pipeline: 'triage', output: result.output });
    expect(shown.steps.map((s: { status: string }) => s.status)).toEqual(['completed', 'completed', 'completed', 'completed']);
    out.length = 0;
    expect(await runCli(['runs', 'list', '--org', org.name, '--json'], cliIo(org.env, out))).toBe(0);
    expect(JSON.parse(out.join('\n')).runs.map((r: { run_id: string }) => r.run_id)).toEqual([result.run_id]);

    const history = historyText(await temporal.workflow.getHandle(result.run_id).fetchHistory());
    expect(history).toContain('ACS_API_KEY');
    for (const secret of [org.apiKey, ECHO_KEY]) expect(history).not.toContain(secret);
  });

  it('run: missing or unknown inputs are refused before anything is sent', async () => {
    const org = await organization();
    const out: string[] = [];
    const code = await runCli(['run', 'triage', '-f', org.file, '--input', 'tiket=T-3'], cliIo(org.env, out));
    expect(code).toBe(1);
    expect(out.join('\n')).toContain('unknown input "tiket" of pipeline triage (did you mean "ticket"?)');
    expect(out.join('\n')).toContain('missing required input "ticket"');
    expect(await threads(org.client, org.name)).toEqual([]);
  });

  it('a human-in-the-loop step survives a SIGKILL of its worker: after a new worker starts and the human answers, the run completes with one message per step', async () => {
    const org = await organization();
    const taskQueue = `pipelines-kill-${randomUUID()}`;
    const child = await spawnWorker(taskQueue, { ...org.env, ACS_BASE_URL: server.url });
    const runId = newRunId(org.name, 'approval');
    await startPipelineRun(approvalInput(org), runId, { settings: testSettings(), taskQueue });
    const waiting = await progressUntil(runId, (p) => p.steps[0]!.status === 'running');
    expect(waiting.status).toBe('running');
    const people = await ids(org.client, org.name);
    // The question is on the service before the worker dies.
    const threadId = await firstThread(org.client, org.name);
    expect(await child.kill('SIGKILL')).toBe('SIGKILL');
    const taskQueueWorker = await startWorker(taskQueue, { env: org.env });
    stops.push(() => taskQueueWorker.stop());
    await org.client.appendMessage(threadId, { sender_agent_id: people['dana']!, content: 'approve' });
    const result = await temporal.workflow.getHandle<(input: PipelineRunInput) => Promise<PipelineResult>>(runId).result();
    expect(result.output).toBe('approve');
    const sent = (await messages(org.client, threadId)).filter((m) => m.sender_id === people['triager']).map((m) => m.content);
    // The triager's own echo of dana's answer is the agent loop's; the pipeline sent the other two, once each.
    expect(sent.filter((c) => !c.startsWith('echo:'))).toEqual(['May we roll out v2? Answer approve or reject in this thread.', 'Approved: rolling out v2.']);
  }, 180_000);

  it('key rotation with grace 0 during a waiting step: the step carries on with the next key of the keyring', async () => {
    const org = await organization();
    // The worker's environment, read at each call: the new key is put there after the rotation.
    const workerEnv: Record<string, string | undefined> = { ...org.env };
    const taskQueue = await queueWithWorker(workerEnv);
    const runId = newRunId(org.name, 'approval');
    await startPipelineRun(approvalInput(org), runId, { settings: testSettings(), taskQueue });
    const waiting = await progressUntil(runId, (p) => p.steps[0]!.status === 'running');
    expect(waiting.steps[0]!.status).toBe('running');
    const orgId = (await org.client.listOrganizations()).find((o) => o.org_name === org.name)!.org_id;
    const threadId = await firstThread(org.client, org.name);
    const [key] = await org.client.listOrgKeys(orgId);
    const rotated = await org.client.rotateOrgKey(orgId, key!.key_id, 0);
    workerEnv['ACS_API_KEY_NEXT'] = rotated.api_key;
    const next = new AcsClient({ baseUrl: server.url, apiKey: rotated.api_key });
    const people = await ids(next, org.name);
    await next.appendMessage(threadId, { sender_agent_id: people['dana']!, content: 'reject' });
    const result = await temporal.workflow.getHandle<(input: PipelineRunInput) => Promise<PipelineResult>>(runId).result();
    expect(result.output).toBe('reject');
    expect(result.steps.map((s) => [s.id, s.status])).toEqual([
      ['ask', 'completed'],
      ['go', 'skipped'],
      ['stop', 'completed'],
    ]);
  }, 120_000);

  it('every key of the keyring refused during a wait: the run fails at once with keys_refused, without retrying', async () => {
    const org = await organization();
    const taskQueue = await queueWithWorker({ ...org.env });
    const runId = newRunId(org.name, 'approval');
    await startPipelineRun(approvalInput(org), runId, { settings: testSettings(), taskQueue });
    await progressUntil(runId, (p) => p.steps[0]!.status === 'running');
    const orgId = (await org.client.listOrganizations()).find((o) => o.org_name === org.name)!.org_id;
    const threadId = await firstThread(org.client, org.name);
    const [key] = await org.client.listOrgKeys(orgId);
    const rotated = await org.client.rotateOrgKey(orgId, key!.key_id, 0);
    // A message from someone else wakes the poll in flight; the next poll meets the revoked key.
    const next = new AcsClient({ baseUrl: server.url, apiKey: rotated.api_key });
    const people = await ids(next, org.name);
    await next.appendMessage(threadId, { sender_agent_id: people['triager']!, content: 'still there?' });
    const failure = await temporal.workflow.getHandle(runId).result().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    let cause = (failure as WorkflowFailedError).cause as { type?: string; cause?: unknown } | undefined;
    while (cause?.cause) cause = cause.cause as typeof cause;
    expect(cause?.type).toBe('keys_refused');
    const history = await temporal.workflow.getHandle(runId).fetchHistory();
    const converse = history.events!.filter((e) => e.activityTaskStartedEventAttributes).map((e) => e.activityTaskStartedEventAttributes!.attempt);
    // resolveTeam and converse each started once: no retry storm.
    expect(converse).toEqual([1, 1]);
  }, 120_000);

  it('runs cancel: a waiting run ends cancelled, its step marked cancelled, and nothing more is sent', async () => {
    const org = await organization();
    const taskQueue = await queueWithWorker({ ...org.env });
    const runId = newRunId(org.name, 'approval');
    await startPipelineRun(approvalInput(org), runId, { settings: testSettings(), taskQueue });
    await progressUntil(runId, (p) => p.steps[0]!.status === 'running');
    const out: string[] = [];
    expect(await runCli(['runs', 'cancel', runId], cliIo(org.env, out)), out.join('\n')).toBe(0);
    const outcome = await temporal.workflow.getHandle(runId).result().catch((error: unknown) => error);
    expect(outcome).toBeInstanceOf(WorkflowFailedError);
    out.length = 0;
    expect(await runCli(['runs', 'show', runId, '--json'], cliIo(org.env, out))).toBe(0);
    const shown = JSON.parse(out.join('\n'));
    expect(shown.status).toBe('cancelled');
    expect(shown.steps.map((s: { status: string }) => s.status)).toEqual(['cancelled', 'pending', 'pending']);
    const threadId = await firstThread(org.client, org.name);
    const people = await ids(org.client, org.name);
    const sent = (await messages(org.client, threadId)).filter((m) => m.sender_id === people['triager']);
    expect(sent.map((m) => m.content)).toEqual(['May we roll out v2? Answer approve or reject in this thread.']);
  }, 120_000);

  it('a pipeline past its history limit continues as new between steps and still sends each message once', async () => {
    const org = await organization();
    const taskQueue = await queueWithWorker(org.env);
    const runId = newRunId(org.name, 'triage');
    const input: PipelineRunInput = {
      connection: { baseUrl: server.url, apiKeyEnv: 'ACS_API_KEY' },
      organization: org.name,
      pipeline: org.definition.pipelines.find((p) => p.name === 'triage')!,
      inputs: { ticket: 'T-4' },
      historyEventLimit: 8,
    };
    await startPipelineRun(input, runId, { settings: testSettings(), taskQueue });
    const handle = temporal.workflow.getHandle<(input: PipelineRunInput) => Promise<PipelineResult>>(runId);
    const result = await handle.result();
    await checkTriage(org, result, 'T-4');
    const runs = [];
    for await (const info of temporal.workflow.list({ query: `WorkflowId = '${runId}'` })) runs.push(info.status.name);
    expect(runs.filter((s) => s === 'CONTINUED_AS_NEW').length).toBeGreaterThanOrEqual(2);
    expect(runs.filter((s) => s === 'COMPLETED')).toEqual(['COMPLETED']);
  }, 120_000);
});
