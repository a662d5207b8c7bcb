/**
 * `npm run histories:record`: records the histories that `test/workflows/replay.test.ts` replays
 * on every `npm test`, from a real Temporal server (started by scripts/with-temporal.sh) and an
 * in-memory acs-server. Each is written as `temporal workflow show -o json` prints it, to
 * test/workflows/histories/<name>.json. Run it after an intended change to a workflow, and keep
 * the old files of workflows that may still be running somewhere (replay must pass for both).
 *
 * Recorded: an apply that creates the example; the same apply again (a no-op); an apply that
 * deletes (approved) and renames; the destroy of that organization; a synthetic apply that
 * continues as new (its first run); a synthetic apply whose batches each hold several teams; an
 * apply that fails (an unset secret). Pipelines of
 * examples/triage.yaml as it was before pipelines decided: triage to completion (a continued
 * thread, a parallel group), its first run when it continues as new, the human-in-the-loop
 * approval answered, and one cancelled while it waits. Pipelines that decide ({@link DECIDE}):
 * a typed reply answered once wrong (re-asked) then right, with the branch not taken skipped; a
 * branch skipped on an input; a loop of 3 iterations; a map of 5 items; a sub-pipeline (the
 * parent's history; the child is a workflow of its own); a sleep; task steps (`task: true`): a typed
 * one dana completes by REST while it waits, then one the echo agent completes; one cancelled while
 * it waits, and one past its timeout (each run cancels its task before it ends); a parallel pair
 * whose brief member times out while the other waits (the run cancels both tasks).
 *
 * Waits that hold nothing ({@link PUSH}): on an organization whose webhook points at the worker's
 * events listener, the typed approval answered by push (a signal), answered wrong then right (a
 * re-ask, two signals), cancelled while it waits by push, and timed out; on an organization
 * without a webhook, the approval waiting by push with nothing delivered (woken by its reconcile
 * read), and the approval polling with the patch (a `converse` activity).
 *
 * Names given as arguments record only those (`npm run histories:record -- pipeline-loop-3`):
 * histories of workflows that may still run somewhere are kept as they were, not recorded again
 * with the current code. `--suffix=S` writes NAME + S + `.json`: a changed workflow's new
 * recordings beside the old ones, which must keep replaying (`patched()`), e.g. the apply's
 * `-batched` histories.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { loadDefinitionFile } from '../definitions/load.ts';
import { desiredState } from '../plan/desired.ts';
import type { DesiredState } from '../plan/types.ts';
import { startServer } from '../service/index.ts';
import { loadTemporalSettings } from '../temporal/settings.ts';
import { syntheticDefinition, withOrganizationName } from '../test/support/synthetic.ts';
import { createWorker } from '../worker/worker.ts';
import { readFileSync } from 'node:fs';
import { AcsClient } from '../client/acs-client.ts';
import { parseDefinition } from '../definitions/load.ts';
import { createApplyActivities } from '../activities/apply-activities.ts';
import { applyLocally } from '../engine/local-engine.ts';
import type { ApplyInput } from '../workflows/apply-orchestration.ts';
import { applyWorkflow } from '../workflows/apply-workflow.ts';
import { reachablePipelines } from '../definitions/pipeline-graph.ts';
import type { PipelineRunInput } from '../workflows/pipeline-orchestration.ts';
import { pipelineWorkflow, progressQuery } from '../workflows/pipeline-workflow.ts';
import type { WorkflowHandleWithFirstExecutionRunId as WorkflowHandle } from '@temporalio/client';

/** The `approval` pipeline of examples/triage.yaml before it became a typed reply: pipeline-approval.json and pipeline-cancelled.json ran it. */
const LEGACY_APPROVAL = `  - name: approval
    team: intake
    description: Human in the loop - the triager asks dana and waits, durably, for her answer
    inputs:
      change: { type: string }
    steps:
      - id: ask
        from: triager
        to: dana
        subject: "Approve {{ inputs.change }}?"
        content: "May we roll out {{ inputs.change }}? Please answer in this thread."
        timeout: 7d
      - id: confirm
        thread: ask
        from: triager
        content: "Noted: {{ steps.ask.reply }}"
        awaitReply: false
    output: "{{ steps.ask.reply }}"
`;

const cli = process.env.TEMPORAL_CLI;
if (!process.env.TEMPORAL_ADDRESS || !cli) {
  process.stderr.write('record-histories: run it through scripts/with-temporal.sh --install -- npm run histories:record\n');
  process.exit(2);
}
const root = join(import.meta.dirname, '..');
/** The histories to record: all when no name is given. */
const only = new Set(process.argv.slice(2).filter((a) => !a.startsWith('--')));
const suffix = process.argv.slice(2).find((a) => a.startsWith('--suffix='))?.slice('--suffix='.length) ?? '';
const wanted = (name: string) => only.size === 0 || only.has(name);

/** The pipelines that decide, on the `intake` team of examples/triage.yaml (echo agents; dana answers by REST). */
const DECIDE = `
  - name: task-step
    team: intake
    steps:
      - id: ask
        from: triager
        to: dana
        task: true
        subject: "Ship it?"
        content: "Ship it? Answer approve or reject."
        reply: { schema: { enum: [approve, reject] } }
      - id: noted
        from: dana
        to: triager
        task: true
        content: "Noted: {{ steps.ask.value }} (task {{ steps.ask.task_id }})"
    output: "{{ steps.ask.value }}"
  - name: task-cancelled
    team: intake
    steps:
      - id: ask
        from: triager
        to: dana
        task: true
        content: "Ship it? (this run will be cancelled)"
  - name: task-timeout
    team: intake
    steps:
      - id: ask
        from: triager
        to: dana
        task: true
        content: "Ship it within two seconds?"
        timeout: 2s
  - name: task-parallel-failed
    team: intake
    steps:
      - parallel:
          - id: ask
            from: triager
            to: dana
            task: true
            content: "Ship it? (a sibling will fail this run)"
          - id: brief
            from: triager
            to: dana
            task: true
            content: "Brief it within two seconds?"
            timeout: 2s
  - name: typed-reask
    team: intake
    steps:
      - id: ask
        from: triager
        to: dana
        content: "Ship it? Answer approve or reject."
        reply: { schema: { enum: [approve, reject] } }
      - id: go
        when: "steps.ask.value == 'approve'"
        thread: ask
        from: triager
        content: "Shipping."
        awaitReply: false
      - id: stop
        when: "steps.ask.value == 'reject'"
        thread: ask
        from: triager
        content: "Not shipping."
        awaitReply: false
    output: "{{ steps.ask.value }}"
  - name: branch
    team: intake
    inputs:
      urgent: { type: boolean, default: false }
    steps:
      - id: page
        when: "inputs.urgent"
        from: dana
        to: triager
        content: "Urgent!"
      - id: queue
        when: "!inputs.urgent"
        from: dana
        to: triager
        content: "For the queue."
    output: "{{ steps.queue.reply }}"
  - name: loop-3
    team: intake
    steps:
      - loop:
          id: rounds
          maxIterations: 5
          until: "iteration == 2"
          steps:
            - id: draft
              from: dana
              to: summarizer
              content: "Round {{ iteration }}"
    output: "{{ steps.draft.reply }}"
  - name: map-5
    team: intake
    steps:
      - map:
          id: each
          items: "['a', 'b', 'c', 'd', 'e']"
          maxConcurrency: 2
          steps:
            - id: handle
              from: dana
              to: triager
              content: "Handle {{ item }}"
    output: "{{ steps.each.status }}"
  - name: announce
    team: intake
    inputs:
      text: { type: string }
    steps:
      - id: tell
        from: dana
        to: summarizer
        content: "Announce: {{ inputs.text }}"
    output: "{{ steps.tell.reply }}"
  - name: sub-pipeline
    team: intake
    steps:
      - run:
          id: notify
          pipeline: announce
          inputs: { text: "v2" }
    output: "{{ steps.notify.value }}"
  - name: sleep
    team: intake
    steps:
      - sleep: { id: pause, for: 1s }
      - id: after
        from: dana
        to: triager
        content: "Awake"
    output: "{{ steps.after.reply }}"
`;
/** Pipelines of the push-wait histories, on the `intake` team of examples/triage.yaml (the approval is the example's own). */
const PUSH = `
  - name: quick-approval
    team: intake
    steps:
      - id: ask
        from: triager
        to: dana
        content: "Quick: approve or reject?"
        timeout: 2s
        reply: { schema: { enum: [approve, reject] } }
  - name: quiet-approval
    team: intake
    waitMode: push
    reconcileEvery: 10s
    steps:
      - id: ask
        from: triager
        to: dana
        content: "Quietly: approve or reject?"
        reply: { schema: { enum: [approve, reject] } }
    output: "{{ steps.ask.value }}"
`;
const outDir = join(root, 'test/workflows/histories');
const settings = loadTemporalSettings(process.env);

// Echo agents answer the pipelines on the agent loop's tick; webhooks reach the worker's listener on loopback.
const server = await startServer({
  inMemory: true,
  port: 0,
  tickMs: 100,
  logger: false,
  rateLimit: false,
  webhooks: { allowPrivate: true, retrySchedule: [500, 1000, 2000, 2000, 2000, 2000, 2000], pollMs: 200 },
});
const { api_key } = await server.provisionOrganization('histories');
const WAITS_SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const env = { RECORD_KEY: api_key, ECHO_PROVIDER_KEY: 'recorded-echo-key', RECORD_WAITS_SECRET: WAITS_SECRET };
const taskQueue = `record-${randomUUID()}`;
const { worker, run, listener } = await createWorker(settings, { taskQueue, activityDeps: { env }, eventsListener: { host: '127.0.0.1', port: 0, secrets: [WAITS_SECRET] } });
const running = run();
const connection = await Connection.connect(settings.connectionOptions as Parameters<typeof Connection.connect>[0]);
const client = new Client({ connection, namespace: settings.namespace });

const example = desiredState(await loadDefinitionFile(join(root, 'examples/acme-research.yaml')));
const input = (desired: DesiredState, extra: Partial<ApplyInput> = {}): ApplyInput => ({
  connection: { baseUrl: server.url, apiKeyEnv: 'RECORD_KEY' },
  desired,
  ...extra,
});

async function record(name: string, args: ApplyInput, expectFailure = false): Promise<void> {
  if (!wanted(name)) return;
  const workflowId = `teamctl-apply/${args.desired.organization.name}`;
  await save(name, await client.workflow.start(applyWorkflow, { taskQueue, workflowId, args: [args] }), expectFailure);
}

/** Waits for the run (failing or not, as expected) and writes its first run's history. */
async function save(name: string, handle: WorkflowHandle, expectFailure = false): Promise<void> {
  if (!wanted(name)) return;
  const workflowId = handle.workflowId;
  try {
    await handle.result();
    if (expectFailure) throw new Error(`${name}: expected the workflow to fail`);
  } catch (error) {
    if (!expectFailure) throw error;
  }
  const json = execFileSync(cli!, ['workflow', 'show', '--workflow-id', workflowId, '--run-id', handle.firstExecutionRunId, '--address', settings.address, '--namespace', settings.namespace, '-o', 'json'], {
    maxBuffer: 64 << 20,
  }).toString();
  // The workflow id goes with the events: a workflow that derives ids from its own (a child workflow's) replays only under it.
  writeFileSync(join(outDir, `${name}${suffix}.json`), `${JSON.stringify({ workflowId, ...(JSON.parse(json) as object) }, null, 1)}\n`);
  process.stdout.write(`recorded ${name}${suffix} (${(JSON.parse(json) as { events: unknown[] }).events.length} events)\n`);
}

try {
  const org = withOrganizationName(example, 'recorded-example');
  await record('apply-example-create', input(org));
  await record('apply-example-no-op', input(org));
  // Deletes (with consent), a rename, then the organization destroyed.
  const renamed = {
    ...org,
    teams: org.teams.map((t) => ({
      ...t,
      name: 'reviews',
      renamedFrom: t.name,
      fields: { ...t.fields, team_name: 'reviews' },
      agents: t.agents.filter((a) => a.name !== 'archivist'),
      edges: t.edges.filter((e) => !e.includes('archivist')),
    })),
  };
  await record('apply-deletes-and-rename', input(renamed, { approvedDeletes: 'all' }));
  await record('destroy-example', input(renamed, { destroy: true, approvedDeletes: 'all' }));
  await record('apply-continue-as-new', input(syntheticDefinition('recorded-large', { teams: 4, agents: 2, humans: 1, edges: 2 }), { historyEventLimit: 20 }));
  // Batches that each hold several teams' changes (the cross-team patch): 6 teams of 6 changes, 2 at a time.
  await record('apply-cross-team-batches', input(syntheticDefinition('recorded-cross-team', { teams: 6, agents: 2, humans: 1, edges: 2 }), { parallelism: 2 }));
  const failing = withOrganizationName(example, 'recorded-failure');
  const unset = { ...failing, organization: { ...failing.organization, providerKeys: [{ provider: 'echo' as const, secretRef: '${env:RECORD_UNSET_VARIABLE}' }] } };
  await record('apply-fails-unresolved-secret', input(unset), true);

  const triageFile = join(root, 'examples/triage.yaml');
  const triageText = readFileSync(triageFile, 'utf8').split('\nschedules:')[0]!;
  // The approval as it was before pipelines decided: the histories recorded then used it.
  const legacyApproval = triageText.slice(0, triageText.indexOf('  - name: approval')) + LEGACY_APPROVAL;
  const triage = parseDefinition(legacyApproval.replace('name: acme-support', 'name: recorded-pipelines'), triageFile);
  const acs = new AcsClient({ baseUrl: server.url, apiKey: api_key });
  /** Waits until a run's step waits, then gives the thread its message opened and dana's id. */
  const waitingThread = async (handle: WorkflowHandle, stepId: string, org: string, marker: string): Promise<{ threadId: string; dana: string }> => {
    for (;;) {
      const progress = await handle.query(progressQuery).catch(() => undefined);
      const step = progress?.steps.find((s) => s.id === stepId);
      if (step?.status === 'running') {
        const found = (await acs.listOrganizations()).find((o) => o.org_name === org)!;
        const team = (await acs.listTeams(found.org_id))[0]!;
        const graph = await acs.getTeam(team.team_id);
        const dana = graph.humans.find((h) => h.name === 'dana')!.human_id;
        for (const edge of graph.edges) {
          for (const thread of await acs.listThreads(edge.edge_id)) {
            const page = await acs.getThread(thread.thread_id, { limit: 200 });
            if (page.messages.some((m) => m.content.includes(marker))) return { threadId: thread.thread_id, dana };
          }
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };
  /** Waits until a thread holds a message starting with `text` (the re-ask has been sent). */
  const messageIn = async (threadId: string, text: string): Promise<void> => {
    while (!(await acs.getThread(threadId, { limit: 200 })).messages.some((m) => m.content.startsWith(text))) await new Promise((resolve) => setTimeout(resolve, 200));
  };

  if (['pipeline-triage', 'pipeline-continue-as-new', 'pipeline-approval', 'pipeline-cancelled'].some(wanted)) {
    await applyLocally(input(desiredState(triage)), createApplyActivities({ env }));
    const run = (pipeline: string, inputs: Record<string, string>, extra: Partial<PipelineRunInput> = {}): PipelineRunInput => ({
      connection: { baseUrl: server.url, apiKeyEnv: 'RECORD_KEY' },
      organization: 'recorded-pipelines',
      pipeline: triage.pipelines.find((p) => p.name === pipeline)!,
      inputs,
      ...extra,
    });
    const start = (id: string, args: PipelineRunInput) => client.workflow.start(pipelineWorkflow, { taskQueue, workflowId: `teamctl-run/recorded-pipelines/${id}`, args: [args] });
    if (wanted('pipeline-triage')) await save('pipeline-triage', await start('triage', run('triage', { ticket: 'T-1' })));
    if (wanted('pipeline-continue-as-new')) await save('pipeline-continue-as-new', await start('triage-continued', run('triage', { ticket: 'T-2' }, { historyEventLimit: 8 })));
    // The human's answer (and the cancellation) come once the step waits, as the progress query shows.
    if (wanted('pipeline-approval')) {
      const approval = await start('approval', run('approval', { change: 'approval' }));
      const { threadId, dana } = await waitingThread(approval, 'ask', 'recorded-pipelines', 'roll out approval');
      await acs.appendMessage(threadId, { sender_agent_id: dana, content: 'approved' });
      await save('pipeline-approval', approval);
    }
    if (wanted('pipeline-cancelled')) {
      const cancelled = await start('cancelled', run('approval', { change: 'cancelled' }));
      await waitingThread(cancelled, 'ask', 'recorded-pipelines', 'roll out cancelled');
      await cancelled.cancel();
      await save('pipeline-cancelled', cancelled, true);
    }
  }

  // Pipelines that decide.
  const decide = parseDefinition(`${triageText.replace('name: acme-support', 'name: recorded-decide')}${DECIDE}`, 'decide.yaml');
  await applyLocally(input(desiredState(decide)), createApplyActivities({ env }));
  const runDecide = (pipeline: string, inputs: PipelineRunInput['inputs'] = {}): PipelineRunInput => {
    const pipelines = reachablePipelines(decide.pipelines, pipeline);
    return {
      connection: { baseUrl: server.url, apiKeyEnv: 'RECORD_KEY' },
      organization: 'recorded-decide',
      pipeline: decide.pipelines.find((p) => p.name === pipeline)!,
      ...(Object.keys(pipelines).length ? { pipelines } : {}),
      inputs,
    };
  };
  const startDecide = (pipeline: string, inputs: PipelineRunInput['inputs'] = {}) =>
    client.workflow.start(pipelineWorkflow, { taskQueue, workflowId: `teamctl-run/recorded-decide/${pipeline}`, args: [runDecide(pipeline, inputs)] });
  if (wanted('pipeline-typed-reask')) {
    const typed = await startDecide('typed-reask');
    const { threadId, dana } = await waitingThread(typed, 'ask', 'recorded-decide', 'Ship it?');
    // A misfit as a person types it: the step answers with what is expected, then waits again.
    await acs.appendMessage(threadId, { sender_agent_id: dana, content: 'Approved!' });
    await messageIn(threadId, 'Your reply does not fit');
    await acs.appendMessage(threadId, { sender_agent_id: dana, content: 'approve' });
    await save('pipeline-typed-reask', typed);
  }
  /** Waits until the run's task step `ask` waits on its task; its task id. */
  const waitingTask = async (handle: WorkflowHandle): Promise<string> => {
    for (;;) {
      const ask = (await handle.query(progressQuery).catch(() => undefined))?.steps.find((s) => s.id === 'ask');
      if (ask?.task_id && ask.wait_mode === 'poll') return ask.task_id;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };
  if (wanted('pipeline-task-step')) {
    // A task step dana completes by REST (an artifact, then the state), then one the echo agent completes.
    const handle = await startDecide('task-step');
    const taskId = await waitingTask(handle);
    await acs.addTaskArtifact(taskId, { parts: [{ text: 'approve' }] });
    await acs.setTaskStatus(taskId, { state: 'completed' });
    await save('pipeline-task-step', handle);
  }
  if (wanted('pipeline-task-cancelled')) {
    // Cancelled while its task step waits: the run cancels the task before it ends.
    const handle = await startDecide('task-cancelled');
    const taskId = await waitingTask(handle);
    await handle.cancel();
    await save('pipeline-task-cancelled', handle, true);
    if ((await acs.getTask(taskId)).state !== 'canceled') throw new Error('pipeline-task-cancelled: the run did not cancel its task');
  }
  if (wanted('pipeline-task-timeout')) {
    // Nobody answers the task in time: the step fails timed_out and the run cancels the task.
    const handle = await startDecide('task-timeout');
    await save('pipeline-task-timeout', handle, true);
    const taskId = (await handle.query(progressQuery)).steps.find((s) => s.id === 'ask')?.task_id;
    if (!taskId || (await acs.getTask(taskId)).state !== 'canceled') throw new Error('pipeline-task-timeout: the run did not cancel its task');
  }
  if (wanted('pipeline-task-parallel-failed')) {
    // A parallel member past its timeout fails the run while its sibling waits on a task: the run
    // cancels both tasks before it ends (the sibling's under the patch pipeline-cancel-tasks-at-end).
    const handle = await startDecide('task-parallel-failed');
    await save('pipeline-task-parallel-failed', handle, true);
    const steps = (await handle.query(progressQuery)).steps;
    for (const id of ['ask', 'brief']) {
      const taskId = steps.find((s) => s.id === id)?.task_id;
      if (!taskId || (await acs.getTask(taskId)).state !== 'canceled') throw new Error(`pipeline-task-parallel-failed: the run did not cancel the task of ${id}`);
    }
  }
  if (wanted('pipeline-branch-skipped')) await save('pipeline-branch-skipped', await startDecide('branch'));
  if (wanted('pipeline-loop-3')) await save('pipeline-loop-3', await startDecide('loop-3'));
  if (wanted('pipeline-map-5')) await save('pipeline-map-5', await startDecide('map-5'));
  if (wanted('pipeline-sub-pipeline')) await save('pipeline-sub-pipeline', await startDecide('sub-pipeline'));
  if (wanted('pipeline-sleep')) await save('pipeline-sleep', await startDecide('sleep'));

  // Waits that hold nothing.
  if (['pipeline-push-approval', 'pipeline-push-reask', 'pipeline-push-cancelled', 'pipeline-push-timeout', 'pipeline-push-reconciled', 'pipeline-poll-patched'].some(wanted)) {
    const withWebhook = triageText
      .replace('name: acme-support', 'name: recorded-push')
      .replace('  providerKeys:', `  webhooks:\n    - name: teamctl-waits\n      url: ${listener!.url}\n      events: [message.created]\n      secret: \${env:RECORD_WAITS_SECRET}\n  providerKeys:`);
    const push = parseDefinition(`${withWebhook}${PUSH}`, 'push.yaml');
    const quiet = parseDefinition(`${triageText.replace('name: acme-support', 'name: recorded-quiet')}${PUSH}`, 'quiet.yaml');
    await applyLocally(input(desiredState(push)), createApplyActivities({ env }));
    await applyLocally(input(desiredState(quiet)), createApplyActivities({ env }));
    /** Waits until the run's step `ask` waits in the way `mode` says (so the answer comes by the way recorded). */
    const waitingBy = async (handle: WorkflowHandle, mode: string): Promise<void> => {
      while ((await handle.query(progressQuery).catch(() => undefined))?.steps.find((s) => s.id === 'ask')?.wait_mode !== mode) await new Promise((resolve) => setTimeout(resolve, 200));
    };
    const startIn = (definition: typeof push, org: string, pipeline: string, id: string, inputs: PipelineRunInput['inputs'] = {}) =>
      client.workflow.start(pipelineWorkflow, {
        taskQueue,
        workflowId: `teamctl-run/${org}/${id}`,
        args: [{ connection: { baseUrl: server.url, apiKeyEnv: 'RECORD_KEY' }, organization: org, pipeline: definition.pipelines.find((p) => p.name === pipeline)!, inputs }],
      });
    if (wanted('pipeline-push-approval')) {
      const handle = await startIn(push, 'recorded-push', 'approval', 'approval', { change: 'push' });
      const { threadId, dana } = await waitingThread(handle, 'ask', 'recorded-push', 'roll out push');
      await waitingBy(handle, 'push');
      await acs.appendMessage(threadId, { sender_agent_id: dana, content: 'approve' });
      await save('pipeline-push-approval', handle);
    }
    if (wanted('pipeline-push-reask')) {
      const handle = await startIn(push, 'recorded-push', 'approval', 'reask', { change: 'reask' });
      const { threadId, dana } = await waitingThread(handle, 'ask', 'recorded-push', 'roll out reask');
      await waitingBy(handle, 'push');
      await acs.appendMessage(threadId, { sender_agent_id: dana, content: 'maybe' });
      await messageIn(threadId, 'Your reply does not fit');
      await acs.appendMessage(threadId, { sender_agent_id: dana, content: 'reject' });
      await save('pipeline-push-reask', handle);
    }
    if (wanted('pipeline-push-cancelled')) {
      const handle = await startIn(push, 'recorded-push', 'approval', 'cancelled', { change: 'cancel-me' });
      await waitingThread(handle, 'ask', 'recorded-push', 'roll out cancel-me');
      await waitingBy(handle, 'push');
      await handle.cancel();
      await save('pipeline-push-cancelled', handle, true);
    }
    if (wanted('pipeline-push-timeout')) await save('pipeline-push-timeout', await startIn(push, 'recorded-push', 'quick-approval', 'timeout'), true);
    if (wanted('pipeline-push-reconciled')) {
      const handle = await startIn(quiet, 'recorded-quiet', 'quiet-approval', 'reconciled');
      const { threadId, dana } = await waitingThread(handle, 'ask', 'recorded-quiet', 'Quietly');
      await waitingBy(handle, 'push');
      await acs.appendMessage(threadId, { sender_agent_id: dana, content: 'approve' });
      await save('pipeline-push-reconciled', handle);
    }
    if (wanted('pipeline-poll-patched')) {
      const handle = await startIn(quiet, 'recorded-quiet', 'approval', 'polled', { change: 'polled' });
      const { threadId, dana } = await waitingThread(handle, 'ask', 'recorded-quiet', 'roll out polled');
      await waitingBy(handle, 'poll');
      await acs.appendMessage(threadId, { sender_agent_id: dana, content: 'approve' });
      await save('pipeline-poll-patched', handle);
    }
  }
} finally {
  worker.shutdown();
  await running;
  await connection.close();
  await server.close();
}
