/**
 * The apply workflow on a real Temporal server (scripts/with-temporal.sh starts one; CI always
 * does) against a real acs-server: the same end state as the local engine, idempotence,
 * continue-as-new, worker crashes, service faults with `Retry-After`, rate-limit pacing, no
 * secret in any history, and replay of freshly recorded histories.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Client } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApplyActivities } from '../../activities/apply-activities.ts';
import { AcsClient } from '../../client/acs-client.ts';
import { runCli } from '../../cli/program.ts';
import { applyLocally } from '../../engine/local-engine.ts';
import { applyWithTemporal, applyWorkflowId } from '../../engine/temporal-engine.ts';
import { desiredState } from '../../plan/desired.ts';
import type { DesiredState } from '../../plan/types.ts';
import { startServer } from '../../service/index.ts';
import { workflowBundlerOptions, workflowsPath } from '../../worker/worker.ts';
import { planOf, readObserved } from '../../workflows/apply-orchestration.ts';
import type { ApplyInput, ApplyResult } from '../../workflows/apply-orchestration.ts';
import { applyWorkflow } from '../../workflows/apply-workflow.ts';
import { startFaultProxy } from '../support/fault-proxy.ts';
import { recordingFetch } from '../support/fetch.ts';
import { shape } from '../support/live-state.ts';
import { desiredFromFile, resourceCount, syntheticDefinition, syntheticResources, withOrganizationName } from '../support/synthetic.ts';
import { connectTestClient, describeTemporal, historyText, spawnWorker, startWorker, testSettings } from '../support/temporal.ts';

const ECHO_KEY = 'temporal-echo-provider-secret-5d2e';

/** Every change of an apply result, once each, as `kind team/name`. */
function distinctChanges(result: ApplyResult): Set<string> {
  return new Set(result.applied.map((c) => c.address));
}

describeTemporal('temporal engine', () => {
  let server: Awaited<ReturnType<typeof startServer>>;
  let apiKey: string;
  let env: Record<string, string>;
  let client: AcsClient;
  let temporal: Client;
  let closeTemporal: (() => Promise<void>) | undefined;
  let example: DesiredState;
  const stops: Array<() => Promise<void>> = [];

  /** A task queue of its own with an in-process worker on it. */
  async function queueWithWorker(deps: Parameters<typeof startWorker>[1] = { env }): Promise<string> {
    const taskQueue = `teamctl-test-${randomUUID()}`;
    const worker = await startWorker(taskQueue, deps);
    stops.push(() => worker.stop());
    return taskQueue;
  }

  const target = (taskQueue: string) => ({ settings: testSettings(), taskQueue });
  const inputFor = (desired: DesiredState, extra: Partial<ApplyInput> = {}): ApplyInput => ({
    connection: { baseUrl: server.url, apiKeyEnv: 'ACS_API_KEY' },
    desired,
    ...extra,
  });
  const named = withOrganizationName;
  /** The end state a local-engine apply of `desired` leaves, under another organization name. */
  async function reference(desired: DesiredState) {
    const orgName = `reference-${randomUUID()}`;
    await applyLocally(inputFor(named(desired, orgName)), createApplyActivities({ env }));
    return shape(client, orgName);
  }

  beforeAll(async () => {
    server = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false, rateLimit: false });
    apiKey = (await server.provisionOrganization('temporal-tests')).api_key;
    env = { ACS_API_KEY: apiKey, ECHO_PROVIDER_KEY: ECHO_KEY };
    client = new AcsClient({ baseUrl: server.url, apiKey });
    example = await desiredFromFile(new URL('../../examples/acme-research.yaml', import.meta.url));
    ({ client: temporal, close: closeTemporal } = await connectTestClient());
  }, 120_000);

  afterAll(async () => {
    for (const stop of stops.reverse()) await stop();
    await closeTemporal?.();
    await server?.close();
  }, 120_000);

  it('apply --engine temporal: the example ends as the local engine leaves it, a second apply sends no mutating request and starts no workflow, and no secret is in the history', async () => {
    const recorder = recordingFetch();
    const taskQueue = await queueWithWorker({ env, fetch: recorder.fetch });
    const orgName = `example-temporal-${randomUUID()}`;
    const file = join(await mkdtemp(join(tmpdir(), 'teamctl-temporal-')), 'team.yaml');
    const text = await readFile(new URL('../../examples/acme-research.yaml', import.meta.url), 'utf8');
    await writeFile(file, text.replace('name: acme-research', `name: ${orgName}`));
    const out: string[] = [];
    const io = { env: { ...process.env, ...env, ACS_BASE_URL: server.url }, isTTY: false, stdout: (t: string) => void out.push(t), stderr: (t: string) => void out.push(t) };
    const apply = async () => {
      out.length = 0;
      const code = await runCli(['apply', '-f', file, '--engine', 'temporal', '--task-queue', taskQueue, '--json'], io);
      expect(code, out.join('\n')).toBe(0);
      return JSON.parse(out.join('\n')) as ApplyResult;
    };

    const first = await apply();
    expect(first.applied.map((c) => c.outcome)).toEqual(Array(8).fill('created'));
    expect(await shape(client, orgName)).toEqual(await reference(example));

    const mutationsBefore = recorder.mutations().length;
    const firstRun = (await temporal.workflow.getHandle(applyWorkflowId(orgName)).describe()).runId;
    const second = await apply();
    expect(second.applied).toEqual([]);
    expect(recorder.mutations().length).toBe(mutationsBefore);
    // The plan found nothing to change: no workflow was started for it.
    expect((await temporal.workflow.getHandle(applyWorkflowId(orgName)).describe()).runId).toBe(firstRun);

    const history = await temporal.workflow.getHandle(applyWorkflowId(orgName)).fetchHistory();
    const searchable = historyText(history);
    expect(searchable).toContain('${env:ECHO_PROVIDER_KEY}');
    expect(searchable).toContain('apiKeyEnv');
    expect(searchable).toContain('ACS_API_KEY');
    for (const secret of [ECHO_KEY, apiKey]) {
      expect(searchable).not.toContain(secret);
      expect(searchable).not.toContain(Buffer.from(secret).toString('base64').slice(0, 16));
    }
    // The history as the official CLI shows it (the format of the replay fixtures) holds no secret either.
    const { stdout } = await promisify(execFile)(
      process.env.TEMPORAL_CLI ?? 'temporal',
      ['workflow', 'show', '--workflow-id', applyWorkflowId(orgName), '--address', process.env.TEMPORAL_ADDRESS!, '--namespace', testSettings().namespace, '-o', 'json'],
      { maxBuffer: 64 << 20 },
    );
    expect(stdout).toContain('EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED');
    const decoded = JSON.stringify(JSON.parse(stdout), (_k, v: unknown) => (typeof v === 'string' && /^[A-Za-z0-9+/=]{16,}$/.test(v) ? Buffer.from(v, 'base64').toString('utf8') : v));
    for (const secret of [ECHO_KEY, apiKey]) {
      expect(stdout).not.toContain(secret);
      expect(decoded).not.toContain(secret);
    }
  }, 120_000);

  it('apply --engine temporal: a second apply of an organization whose apply is running is refused, naming the running workflow', async () => {
    const taskQueue = await queueWithWorker();
    const desired = named(example, `example-busy-${randomUUID()}`);
    // The first apply cannot reach its service, so it keeps retrying (running) while the second comes.
    const unreachable = { ...inputFor(desired), connection: { baseUrl: 'http://127.0.0.1:1', apiKeyEnv: 'ACS_API_KEY' } };
    const first = await temporal.workflow.start(applyWorkflow, { taskQueue, workflowId: applyWorkflowId(desired.organization.name), args: [unreachable] });
    try {
      await expect(applyWithTemporal(inputFor(desired), target(taskQueue))).rejects.toMatchObject({
        code: 'apply_in_progress',
        message: expect.stringContaining(`teamctl-apply/${desired.organization.name}, run ${first.firstExecutionRunId}`),
      });
    } finally {
      await first.terminate('test over');
    }
  }, 120_000);

  it('apply --engine temporal: with no worker polling the task queue it is refused within the 5 s a starting worker gets, saying it waits, naming the queue, and starts no workflow', async () => {
    const taskQueue = `teamctl-idle-${randomUUID()}`;
    const desired = named(example, `example-idle-${randomUUID()}`);
    const waits: string[] = [];
    await expect(applyWithTemporal(inputFor(desired), { ...target(taskQueue), onWait: (text) => waits.push(text) })).rejects.toMatchObject({
      code: 'no_worker',
      message: expect.stringContaining(`no worker polls task queue "${taskQueue}"`),
    });
    expect(waits).toEqual([`no worker polls task queue "${taskQueue}" yet: waiting up to 5 s for one that is starting`]);
    await expect(temporal.workflow.getHandle(applyWorkflowId(desired.organization.name)).describe()).rejects.toThrow(/not found/i);
  });

  it('apply --engine temporal: 32 teams end as the local engine leaves them, continuing as new past the history limit, each change once, then a no-op', async () => {
    const recorder = recordingFetch();
    const taskQueue = await queueWithWorker({ env, fetch: recorder.fetch });
    const size = { teams: 32, agents: 4, humans: 1, edges: 4 };
    const desired = syntheticDefinition(`large-${randomUUID()}`, size);
    const handle = await temporal.workflow.start(applyWorkflow, {
      taskQueue,
      workflowId: applyWorkflowId(desired.organization.name),
      args: [inputFor(desired, { historyEventLimit: 300 })],
    });
    const result = await handle.result();
    expect(distinctChanges(result).size).toBe(resourceCount(size));
    expect(result.applied).toHaveLength(resourceCount(size));
    expect(await shape(client, desired.organization.name)).toEqual(await reference(desired));

    const firstRun = await temporal.workflow.getHandle(handle.workflowId, handle.firstExecutionRunId).fetchHistory();
    expect(firstRun.events?.at(-1)?.workflowExecutionContinuedAsNewEventAttributes).toBeTruthy();
    expect(firstRun.events?.length).toBeLessThan(300 + 60);

    const mutationsBefore = recorder.mutations().length;
    const again = await applyWithTemporal(inputFor(desired), target(taskQueue));
    expect(again.applied).toEqual([]);
    expect(recorder.mutations().length).toBe(mutationsBefore);

    // Many changes finishing together is where a scheduler can depend on timing: every run of
    // this chain must replay against the code that made it.
    const runs = [];
    for (let runId: string | undefined = handle.firstExecutionRunId; runId; ) {
      const history = await temporal.workflow.getHandle(handle.workflowId, runId).fetchHistory();
      runs.push({ workflowId: `${handle.workflowId}/${runId}`, history });
      runId = history.events?.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
    }
    expect(runs.length).toBeGreaterThan(1);
    for await (const replayed of Worker.runReplayHistories({ workflowsPath, bundlerOptions: workflowBundlerOptions, replayName: 'replay-large' }, runs)) {
      expect(replayed.error?.message, replayed.workflowId).toBeUndefined();
    }
  }, 180_000);

  it('apply --engine temporal: an apply whose result is over 512 KiB (within its own bound of 1,000,000 bytes) leaves no payload-size warning in the worker\'s log', async () => {
    const taskQueue = `teamctl-test-${randomUUID()}`;
    const worker = await spawnWorker(taskQueue, { ...env, TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS! });
    try {
      // 300 agents with instructions of 2,000 characters: each listed change carries them.
      const resources = syntheticResources(`payload-${randomUUID().slice(0, 8)}`, { teams: 6, agents: 50, humans: 0, edges: 0 });
      for (const team of resources.teams!) for (const agent of team.agents!) Object.assign(agent, { instructions: 'Answer in one line. '.repeat(100) });
      const result = await applyWithTemporal(inputFor(desiredState(resources)), target(taskQueue));
      expect(result.applied).toHaveLength(resourceCount({ teams: 6, agents: 50, edges: 0 }));
      expect(result.omitted).toBeUndefined();
      expect(Buffer.byteLength(JSON.stringify(result))).toBeGreaterThan(512 * 1024);
      expect(worker.output()).not.toMatch(/TMPRL1103|exceeded the warning limit/);
    } finally {
      await worker.kill('SIGTERM');
    }
  });

  it('apply --engine temporal: at parallelism 1 the new teams with their participants and edges are one local activity, and a re-apply reads the whole live state with one', async () => {
    const taskQueue = await queueWithWorker();
    const size = { teams: 3, agents: 4, humans: 1, edges: 4 };
    const desired = syntheticDefinition(`batched-${randomUUID()}`, size);
    const localActivities = async (runId: string) =>
      ((await temporal.workflow.getHandle(applyWorkflowId(desired.organization.name), runId).fetchHistory()).events ?? []).filter(
        (e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity',
      ).length;
    // At parallelism 1 no batch is split to keep more calls going at the end.
    const first = await temporal.workflow.start(applyWorkflow, { taskQueue, workflowId: applyWorkflowId(desired.organization.name), args: [inputFor(desired, { parallelism: 1 })] });
    expect((await first.result()).applied).toHaveLength(resourceCount(size));
    expect(await shape(client, desired.organization.name)).toEqual(await reference(desired));
    // readOrganization, the organization's create, then one call for the three teams (30 changes,
    // under the batch size of several teams).
    expect(await localActivities(first.firstExecutionRunId)).toBe(1 + 1 + 1);
    const again = await temporal.workflow.start(applyWorkflow, { taskQueue, workflowId: applyWorkflowId(desired.organization.name), args: [inputFor(desired)] });
    expect((await again.result()).applied).toEqual([]);
    // readOrganization, which brings the teams' graphs along.
    expect(await localActivities(again.firstExecutionRunId)).toBe(1);
  }, 120_000);

  it('apply --engine temporal: a call of several teams has the time per change a call of one team has: 63 changes at 100 ms each finish under a 5 s timeout per 40, each change once', async () => {
    const taskQueue = await queueWithWorker();
    const size = { teams: 3, agents: 10, humans: 0, edges: 10 };
    const desired = syntheticDefinition(`slow-calls-${randomUUID()}`, size);
    const total = resourceCount(size);
    // Each request takes 100 ms more: the call of the three teams (63 changes, one after another)
    // needs ~6.3 s, past 5 s but within the 10 s that two times 40 changes get. (The margin, ~60 ms
    // per change, is wide enough for a loaded machine: at 40 ms and 2 s it was 23 ms, which a
    // machine at load 10 used up.)
    const proxy = await startFaultProxy({ target: server.url, delayMs: 100 });
    try {
      const input = { ...inputFor(desired, { parallelism: 1, activityTimeoutSeconds: 5 }), connection: { baseUrl: proxy.url, apiKeyEnv: 'ACS_API_KEY' } };
      const handle = await temporal.workflow.start(applyWorkflow, { taskQueue, workflowId: applyWorkflowId(desired.organization.name), args: [input] });
      expect((await handle.result()).applied).toHaveLength(total);
      const markers = ((await handle.fetchHistory()).events ?? []).filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity');
      // readOrganization, the organization's create, the three teams in one call.
      expect(markers).toHaveLength(3);
      expect(proxy.created()).toBe(total);
      expect(proxy.forwarded.filter((line) => line.includes(' POST '))).toHaveLength(total);
    } finally {
      await proxy.close();
    }
  }, 120_000);

  it('apply --engine temporal: the worker killed with SIGKILL at three points of an apply, a new one started each time: the apply completes, nothing is created twice, the graph equals the definition', async () => {
    const taskQueue = `teamctl-chaos-${randomUUID()}`;
    const size = { teams: 30, agents: 3, humans: 1, edges: 3 };
    const desired = syntheticDefinition(`chaos-${randomUUID()}`, size);
    const total = resourceCount(size);
    // Latency in front of the service keeps the apply running long enough to be cut three times.
    const proxy = await startFaultProxy({ target: server.url, delayMs: 40 });
    const workerEnv = { ...env, TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS! };
    let worker = await spawnWorker(taskQueue, workerEnv);
    try {
      const handle = await temporal.workflow.start(applyWorkflow, {
        taskQueue,
        workflowId: applyWorkflowId(desired.organization.name),
        args: [{ ...inputFor(desired, { parallelism: 2 }), connection: { baseUrl: proxy.url, apiKeyEnv: 'ACS_API_KEY' } }],
      });
      const killedAt: number[] = [];
      for (const fraction of [0.15, 0.45, 0.75]) {
        for (let waited = 0; proxy.created() < total * fraction; waited += 50) {
          if (waited > 120_000) throw new Error(`apply stalled at ${proxy.created()} of ${total} creates:\n${worker.output()}`);
          await new Promise((r) => setTimeout(r, 50));
        }
        killedAt.push(proxy.created());
        expect(await worker.kill('SIGKILL')).toBe('SIGKILL');
        worker = await spawnWorker(taskQueue, workerEnv);
      }
      const result = await handle.result();
      expect(killedAt.every((n) => n < total), `killed after ${killedAt.join(', ')} of ${total} creates`).toBe(true);
      expect(distinctChanges(result).size).toBe(total);
      // Every resource was created by exactly one successful POST.
      expect(proxy.created()).toBe(total);
      expect(await shape(client, desired.organization.name)).toEqual(await reference(desired));
    } finally {
      await worker.kill('SIGTERM');
      await proxy.close();
    }
  }, 300_000);

  it('apply --engine temporal: the worker killed with SIGKILL in the middle of the deletes, a new one started: the apply completes, each resource deleted by one request, nothing left over', async () => {
    const taskQueue = `teamctl-chaos-deletes-${randomUUID()}`;
    const size = { teams: 10, agents: 4, humans: 1, edges: 4 };
    const full = syntheticDefinition(`chaos-deletes-${randomUUID()}`, size);
    await applyLocally(inputFor(full), createApplyActivities({ env }));
    // Half the teams go whole; the others lose two agents, their edges with them.
    const kept = full.teams.slice(0, size.teams / 2).map((t) => ({
      ...t,
      agents: t.agents.slice(0, 2),
      edges: t.edges.filter((pair) => pair.every((p) => !['agent-2', 'agent-3'].includes(p))),
    }));
    const desired = { ...full, teams: kept };
    const planned = planOf({ desired }, await readObserved(createApplyActivities({ env }), inputFor(desired).connection, desired));
    const deletes = planned.filter((c) => c.action === 'delete').length;
    expect(deletes).toBeGreaterThan(20);

    const proxy = await startFaultProxy({ target: server.url, delayMs: 40 });
    const workerEnv = { ...env, TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS! };
    let worker = await spawnWorker(taskQueue, workerEnv);
    const deleted = () => proxy.forwarded.filter((f) => /^2\d\d DELETE /.test(f));
    try {
      const handle = await temporal.workflow.start(applyWorkflow, {
        taskQueue,
        workflowId: applyWorkflowId(desired.organization.name),
        args: [{ ...inputFor(desired, { parallelism: 2, approvedDeletes: 'all' }), connection: { baseUrl: proxy.url, apiKeyEnv: 'ACS_API_KEY' } }],
      });
      for (let waited = 0; deleted().length < deletes / 2; waited += 50) {
        if (waited > 120_000) throw new Error(`apply stalled at ${deleted().length} of ${deletes} deletes:\n${worker.output()}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const killedAt = deleted().length;
      expect(await worker.kill('SIGKILL')).toBe('SIGKILL');
      worker = await spawnWorker(taskQueue, workerEnv);
      const result = await handle.result();
      expect(killedAt).toBeLessThan(deletes);
      expect(result.applied.filter((c) => c.action === 'delete')).toHaveLength(deletes);
      // Each resource was deleted by exactly one successful DELETE (a batch run again after the
      // crash finds what it had deleted gone, which counts as deleted); nothing else changed.
      expect(deleted()).toHaveLength(deletes);
      expect(new Set(deleted()).size).toBe(deletes);
      expect(proxy.forwarded.filter((f) => / (POST|PATCH|PUT) /.test(f))).toEqual([]);
      expect(await shape(client, desired.organization.name)).toEqual(await reference(desired));
    } finally {
      await worker.kill('SIGTERM');
      await proxy.close();
    }
  }, 300_000);

  it('apply, on both engines: 429 and 503 answers with Retry-After and lost answers are retried no earlier than told, with no duplicate', async () => {
    const size = { teams: 5, agents: 3, humans: 1, edges: 3 };
    const expected = await reference(syntheticDefinition('faults', size));
    const faultsOf = new Map<string, number>();
    const proxy = await startFaultProxy({
      target: server.url,
      // Longer than the policy's first backoff (1 s), so a retry that ignored Retry-After would show.
      retryAfterSeconds: 2,
      fault: (n, method, path) => {
        const fault = n % 6 === 0 ? 'refuse-429' : n % 6 === 3 ? 'refuse-503' : method === 'POST' && n % 10 === 7 ? 'lose-answer' : 'pass';
        if (fault === 'pass') return fault;
        // At most two faults per request: retries that wait the same Retry-After come back in the
        // same order, so a counter alone could hand one request a faulty slot on every attempt
        // until its retries run out; that would test the counter, not the retry policy.
        const key = `${method} ${path}`;
        const seen = faultsOf.get(key) ?? 0;
        if (seen >= 2) return 'pass';
        faultsOf.set(key, seen + 1);
        return fault;
      },
    });
    try {
      const viaProxy = (desired: DesiredState): ApplyInput => ({ ...inputFor(desired), connection: { baseUrl: proxy.url, apiKeyEnv: 'ACS_API_KEY' } });
      const local = syntheticDefinition(`faults-local-${randomUUID()}`, size);
      await applyLocally(viaProxy(local), createApplyActivities({ env }));
      const remote = syntheticDefinition(`faults-temporal-${randomUUID()}`, size);
      await applyWithTemporal(viaProxy(remote), target(await queueWithWorker()));

      expect(proxy.refusals.length).toBeGreaterThan(20);
      expect(proxy.forwarded.some((f) => f.startsWith('201 POST'))).toBe(true);
      for (const refusal of proxy.refusals) {
        expect(refusal.retriedAt, `${refusal.request} was never retried`).toBeDefined();
        expect(refusal.retriedAt! - refusal.at, `${refusal.status} ${refusal.request}`).toBeGreaterThanOrEqual(refusal.retryAfterMs);
      }
      expect(proxy.created()).toBe(2 * resourceCount(size));
      expect(await shape(client, local.organization.name)).toEqual(expected);
      expect(await shape(client, remote.organization.name)).toEqual(expected);
    } finally {
      await proxy.close();
    }
  }, 180_000);

  it('apply --engine temporal: an apply larger than the rate limit allows at once paces itself and finishes in one invocation with no 429', async () => {
    const limited = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false, rateLimit: { max: 40, windowMs: 3_000 } });
    const key = (await limited.provisionOrganization('paced')).api_key;
    const proxy = await startFaultProxy({ target: limited.url });
    try {
      const taskQueue = await queueWithWorker({ env: { ACS_PACED_KEY: key } });
      const size = { teams: 10, agents: 3, humans: 1, edges: 3 };
      const desired = syntheticDefinition(`paced-${randomUUID()}`, size);
      const result = await applyWithTemporal({ connection: { baseUrl: proxy.url, apiKeyEnv: 'ACS_PACED_KEY' }, desired }, target(taskQueue));
      expect(result.applied).toHaveLength(resourceCount(size));
      expect(proxy.forwarded.length).toBeGreaterThan(2 * 40);
      expect(proxy.serverAnswers(429)).toBe(0);
    } finally {
      await proxy.close();
      await limited.close();
    }
  }, 120_000);

  it('teamctl worker: SIGTERM or SIGINT stops it cleanly: it says so, closes its connection and exits 0', async () => {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      const worker = await spawnWorker(`teamctl-stop-${randomUUID()}`, { ...env, TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS! });
      expect(await worker.kill(signal), worker.output()).toBe(0);
      expect(worker.output()).toContain('teamctl worker stopped');
    }
  }, 120_000);

  it('replay: histories recorded from this server replay against the current workflow code', async () => {
    const taskQueue = await queueWithWorker();
    const desired = named(example, `replayed-${randomUUID()}`);
    const handle = await temporal.workflow.start(applyWorkflow, { taskQueue, workflowId: applyWorkflowId(desired.organization.name), args: [inputFor(desired)] });
    await handle.result();
    const history = await handle.fetchHistory();
    await expect(Worker.runReplayHistory({ workflowsPath, bundlerOptions: workflowBundlerOptions }, history, handle.workflowId)).resolves.toBeUndefined();
  }, 120_000);
});
