/**
 * Pipelines that decide on a real Temporal server, against a real acs-server whose openai agents
 * answer through a scripted loopback OpenAI-compatible server: the `review` pipeline (typed reply
 * re-asked, branch taken and skipped, loop of three, map with a thread per item, a sub-pipeline as
 * a child workflow, a sleep, onError) with the same checks as on the local engine, also through
 * continue-as-new in the middle of its loop and map; the typed approval of examples/triage.yaml
 * answered by a person found through `runs show` and `run --detach`; and a worker SIGKILLed in the
 * middle of a loop and of a map: the run completes and no message is sent twice.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runCli } from '../../cli/program.ts';
import { loadDefinitionFile } from '../../definitions/load.ts';
import { newRunId, startPipelineRun } from '../../engine/temporal-runs.ts';
import type { RunDetails } from '../../engine/temporal-runs.ts';
import type { PipelineProgress, PipelineResult, PipelineRunInput, StepProgress } from '../../workflows/pipeline-orchestration.ts';
import { progressQuery } from '../../workflows/pipeline-workflow.ts';
import { checkReviewRun, cliIo, decideInput, decideOrganization, entry, eventually, startDecideServer, teamThreads, type DecideOrg, type DecideServer } from '../support/decide.ts';
import { connectTestClient, describeTemporal, spawnWorker, startWorker, testSettings } from '../support/temporal.ts';

describeTemporal('pipelines that decide, on Temporal', () => {
  let decide: DecideServer;
  let temporal: Client;
  let closeTemporal: (() => Promise<void>) | undefined;
  const stops: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    decide = await startDecideServer();
    ({ client: temporal, close: closeTemporal } = await connectTestClient());
  }, 120_000);

  afterAll(async () => {
    for (const stop of stops.reverse()) await stop();
    await closeTemporal?.();
    await decide?.close();
  }, 120_000);

  async function queueWithWorker(env: Record<string, string>): Promise<string> {
    const taskQueue = `decide-${randomUUID()}`;
    const worker = await startWorker(taskQueue, { env });
    stops.push(() => worker.stop());
    return taskQueue;
  }

  const result = (runId: string) => temporal.workflow.getHandle<(input: PipelineRunInput) => Promise<PipelineResult>>(runId).result();

  /** Polls the run's `progress` query until `ready` holds. */
  async function progressUntil(runId: string, ready: (p: PipelineProgress) => boolean): Promise<PipelineProgress> {
    return eventually(async () => {
      const progress = await temporal.workflow.getHandle(runId).query(progressQuery).catch(() => undefined);
      return progress && ready(progress) ? progress : undefined;
    }, 120_000);
  }

  /** Answers as ext the questions of dana's not answered yet, in every thread between them. */
  async function answerExt(org: DecideOrg, answer: (question: string) => string | undefined): Promise<number> {
    let count = 0;
    for (const thread of await teamThreads(org)) {
      if (!thread.between.includes('ext')) continue;
      const last = thread.messages.at(-1);
      const content = last && last[0] === 'dana' ? answer(last[1]) : undefined;
      if (content === undefined) continue;
      await org.client.appendMessage(thread.threadId, { sender_agent_id: org.ids['ext']!, content });
      count++;
    }
    return count;
  }

  it('run --engine temporal: the review pipeline decides as on the local engine, its sub-pipeline is a child workflow under the run, and teamctl prints entries as they finish', async () => {
    const org = await decideOrganization(decide.server);
    const taskQueue = await queueWithWorker(org.env);
    const out: string[] = [];
    const code = await runCli(['run', 'review', '-f', org.file, '--input', 'doc=T-1', '--engine', 'temporal', '--task-queue', taskQueue], cliIo(decide.server.url, org.env, out));
    expect(code, out.join('\n')).toBe(0);
    const runId = /^Started run (\S+);/.exec(out[0]!)![1]!;
    const lines = out.map((l) => l.replace(/thread [0-9a-f-]{36}/g, 'thread T'));
    expect(lines).toContain('↷ page (skipped)');
    expect(lines).toContain('rounds › iteration 2 › ✓ verdict  thread T  reply: approve');
    expect(lines).toContain(`✓ notify  run announce as ${runId}/notify  output: reply to: Announce: approve`);
    expect(lines.at(-1)).toBe('output: approve after 3 rounds; ping failed (timed_out)');

    const done = await result(runId);
    await checkReviewRun(org, done, 'T-1');
    const child = await temporal.workflow.getHandle(`${runId}/notify`).describe();
    expect(child.type).toBe('pipelineWorkflow');
    expect(child.status.name).toBe('COMPLETED');
    expect(child.parentExecution?.workflowId).toBe(runId);

    // runs show: the same tree, with the child's steps under its entry; runs list shows the parent only.
    out.length = 0;
    expect(await runCli(['runs', 'show', runId, '--json'], cliIo(decide.server.url, org.env, out))).toBe(0);
    const shown = JSON.parse(out.join('\n')) as RunDetails;
    expect(shown.status).toBe('completed');
    expect(entry(shown.steps!, 'notify').steps?.map((s) => [s.id, s.status, s.reply])).toEqual([['tell', 'completed', 'reply to: Announce: approve']]);
    expect(entry(shown.steps!, 'rounds').iterations).toHaveLength(3);
    out.length = 0;
    expect(await runCli(['runs', 'show', runId], cliIo(decide.server.url, org.env, out))).toBe(0);
    const tree = out.map((l) => l.replace(/thread [0-9a-f-]{36}/g, 'thread T'));
    expect(tree).toContain('      iteration 1');
    expect(tree).toContain('        ✓ verdict  thread T  reply: revise');
    expect(tree).toContain('      ✓ item 0: "repro"');
    expect(tree).toContain('      ✗ reply 1 did not fit: It looks like a bug to me.');
    expect(tree).toContain('          /category must be one of bug, question, feature');
    expect(tree).toContain('  ↷ page (skipped)');
    expect(tree).toContain('      ✓ tell  thread T  reply: reply to: Announce: approve');
    out.length = 0;
    expect(await runCli(['runs', 'list', '--org', org.name, '--json'], cliIo(decide.server.url, org.env, out))).toBe(0);
    expect(JSON.parse(out.join('\n')).runs.map((r: { run_id: string }) => r.run_id)).toEqual([runId]);
  }, 240_000);

  it('a run past its history limit continues as new in the middle of its loop and its map, and still decides the same, each message sent once', async () => {
    const org = await decideOrganization(decide.server);
    const taskQueue = await queueWithWorker(org.env);
    const runId = newRunId(org.name, 'review');
    await startPipelineRun({ ...decideInput(decide.server.url, org, 'review', { doc: 'T-2' }), historyEventLimit: 12 }, runId, { settings: testSettings(), taskQueue });
    const done = await result(runId);
    await checkReviewRun(org, done, 'T-2');
    const runs: string[] = [];
    const carried: Array<Record<string, { status: string }>> = [];
    for await (const info of temporal.workflow.list({ query: `WorkflowId = '${runId}'` })) {
      runs.push(info.status.name);
      if (info.status.name !== 'CONTINUED_AS_NEW') continue;
      const history = await temporal.workflow.getHandle(runId, info.runId).fetchHistory();
      const payload = history.events!.at(-1)!.workflowExecutionContinuedAsNewEventAttributes!.input!.payloads![0]!;
      carried.push((JSON.parse(Buffer.from(payload.data!).toString('utf8')) as PipelineRunInput).carried!.steps as Record<string, { status: string }>);
    }
    expect(runs.filter((s) => s === 'COMPLETED')).toEqual(['COMPLETED']);
    // The chain continued between the loop's iterations and between the map's items, not only between entries.
    expect(carried.some((steps) => steps['rounds']!.status === 'running')).toBe(true);
    expect(carried.some((steps) => steps['per-item']!.status === 'running')).toBe(true);
  }, 240_000);

  it('a typed approval answered by a person: runs show names the thread and both participants while the step waits, run --detach says how to answer, a misfit is asked again, and the pipeline branches on the answer', async () => {
    const org = await decideOrganization(decide.server);
    // The approval of examples/triage.yaml on this organization's team (triager → dana).
    const text = (await readFile(new URL('../../examples/triage.yaml', import.meta.url), 'utf8')).split('\nschedules:')[0]!;
    const approval = text.slice(text.indexOf('  - name: approval')).replace('team: intake', 'team: desk');
    const file = join(await mkdtemp(join(tmpdir(), 'teamctl-decide-')), 'approval.yaml');
    await writeFile(file, (await readFile(org.file, 'utf8')).replace('pipelines:\n', `pipelines:\n${approval}`));
    expect((await loadDefinitionFile(file)).pipelines.map((p) => p.name)).toContain('approval');
    const taskQueue = await queueWithWorker(org.env);

    const out: string[] = [];
    const code = await runCli(['run', 'approval', '-f', file, '--input', 'change=v2', '--engine', 'temporal', '--task-queue', taskQueue, '--detach'], cliIo(decide.server.url, org.env, out));
    expect(code, out.join('\n')).toBe(0);
    const runId = out[0]!;
    const waitingLine = out.find((l) => l.startsWith('dana answers step ask'))!;
    const threadId = /\(thread ([0-9a-f-]{36}), from triager\)/.exec(waitingLine)![1]!;
    expect(waitingLine).toBe(`dana answers step ask (thread ${threadId}, from triager): teamctl thread send ${threadId} --from dana --content '…'`);

    out.length = 0;
    expect(await runCli(['runs', 'show', runId, '--json'], cliIo(decide.server.url, org.env, out))).toBe(0);
    const shown = JSON.parse(out.join('\n')) as RunDetails;
    expect(entry(shown.steps!, 'ask')).toMatchObject({ status: 'running', thread_id: threadId, from: 'triager', to: 'dana', awaiting: 'dana' });
    // How it waits (`wait_mode`) shows once the step has begun to wait: by poll, as this organization has no webhook.
    const waits = { step: 'ask', thread_id: threadId, from: 'triager', to: 'dana', answer_with: `teamctl thread send ${threadId} --from dana --content '…'` };
    expect(shown.waiting).toHaveLength(1);
    expect([waits, { ...waits, wait_mode: 'poll' }]).toContainEqual(shown.waiting[0]);
    out.length = 0;
    expect(await runCli(['runs', 'show', runId], cliIo(decide.server.url, org.env, out))).toBe(0);
    const line = `  … ask (running)  thread ${threadId}  triager → dana, awaiting dana`;
    expect(out.filter((l) => l === line || l === `${line} (waits by poll)`)).toHaveLength(1);

    // A misfit, as a person might type it, is answered with what is expected; then the right word.
    expect(await runCli(['thread', 'send', threadId, '--from', 'dana', '--content', 'Approved!'], cliIo(decide.server.url, org.env, out))).toBe(0);
    await progressUntil(runId, (p) => (entry(p.steps, 'ask').misfits?.length ?? 0) === 1);
    expect(await runCli(['thread', 'send', threadId, '--from', 'dana', '--content', 'approve'], cliIo(decide.server.url, org.env, out))).toBe(0);
    const done = await result(runId);
    expect(done.output).toBe('approve');
    expect(done.steps.map((s: StepProgress) => [s.id, s.status])).toEqual([
      ['ask', 'completed'],
      ['go', 'completed'],
      ['stop', 'skipped'],
    ]);
    const thread = (await teamThreads(org)).find((t) => t.threadId === threadId)!;
    expect(thread.messages.filter(([who]) => who === 'triager').map(([, t]) => t).filter((t) => !t.startsWith('reply to:'))).toEqual([
      'May we roll out v2? Answer approve or reject in this thread.',
      'Your reply does not fit what this step expects:\n- the reply must be one of approve, reject\nPlease answer again (reply 2 of 3) with one of: approve, reject.',
      'Approved: rolling out v2.',
    ]);
  }, 240_000);

  it('run --engine temporal, followed: a step waiting for a person prints who answers, the thread and the command, the line the local engine prints too', async () => {
    const org = await decideOrganization(decide.server);
    const text = (await readFile(new URL('../../examples/triage.yaml', import.meta.url), 'utf8')).split('\nschedules:')[0]!;
    const approval = text.slice(text.indexOf('  - name: approval')).replace('team: intake', 'team: desk');
    const file = join(await mkdtemp(join(tmpdir(), 'teamctl-decide-')), 'approval.yaml');
    await writeFile(file, (await readFile(org.file, 'utf8')).replace('pipelines:\n', `pipelines:\n${approval}`));
    const taskQueue = await queueWithWorker(org.env);
    const out: string[] = [];
    const running = runCli(['run', 'approval', '-f', file, '--input', 'change=v3', '--engine', 'temporal', '--task-queue', taskQueue], cliIo(decide.server.url, org.env, out));
    const line = await eventually(async () => out.find((l) => l.startsWith('dana answers step ask')), 120_000);
    const threadId = /\(thread ([0-9a-f-]{36}), from triager\)/.exec(line)![1]!;
    expect(line).toBe(`dana answers step ask (thread ${threadId}, from triager): teamctl thread send ${threadId} --from dana --content '…'`);
    // Said once, and not also as the entry line an agent's wait gets.
    expect(out.filter((l) => l.includes('awaiting dana'))).toEqual([]);
    expect(await runCli(['thread', 'send', threadId, '--from', 'dana', '--content', 'approve'], cliIo(decide.server.url, org.env, []))).toBe(0);
    expect(await running, out.join('\n')).toBe(0);
    expect(out.at(-1)).toBe('output: approve');
    expect(out.filter((l) => l.startsWith('dana answers step ask'))).toHaveLength(1);
  }, 240_000);

  it('a worker SIGKILLed in the middle of a loop: a new worker carries the run to its end, and no round is asked twice', async () => {
    const org = await decideOrganization(decide.server);
    const taskQueue = `decide-kill-loop-${randomUUID()}`;
    const child = await spawnWorker(taskQueue, { ...org.env, ACS_BASE_URL: decide.server.url });
    const runId = newRunId(org.name, 'rounds-for-a-person');
    await startPipelineRun(decideInput(decide.server.url, org, 'rounds-for-a-person'), runId, { settings: testSettings(), taskQueue });
    const answer = (q: string) => (/^Round [01]:/.test(q) ? 'more' : /^Round \d+:/.test(q) ? 'done' : undefined);
    await eventually(async () => ((await answerExt(org, answer)) > 0 ? true : undefined));
    // Iteration 1 asks: kill the worker while it waits for the answer.
    await progressUntil(runId, (p) => (entry(p.steps, 'rounds').iterations?.length ?? 0) === 2 && entry(entry(p.steps, 'rounds').iterations![1]!.steps, 'ask').status === 'running');
    await eventually(async () => ((await teamThreads(org)).some((t) => t.messages.at(-1)?.[1].startsWith('Round 1')) ? true : undefined));
    expect(await child.kill('SIGKILL')).toBe('SIGKILL');
    const worker = await startWorker(taskQueue, { env: org.env });
    stops.push(() => worker.stop());
    const answering = setInterval(() => void answerExt(org, answer).catch(() => undefined), 300);
    try {
      const done = await result(runId);
      expect(done.output).toBe('3');
    } finally {
      clearInterval(answering);
    }
    const threads = (await teamThreads(org)).filter((t) => t.between.includes('ext'));
    expect(threads.map((t) => t.messages)).toEqual([
      [
        ['dana', 'Round 0: done or more?'],
        ['ext', 'more'],
        ['dana', 'Round 1: done or more?'],
        ['ext', 'more'],
        ['dana', 'Round 2: done or more?'],
        ['ext', 'done'],
      ],
    ]);
  }, 240_000);

  it('a worker SIGKILLed in the middle of a map: a new worker carries the run to its end, and no item is asked twice', async () => {
    const org = await decideOrganization(decide.server);
    const taskQueue = `decide-kill-map-${randomUUID()}`;
    const child = await spawnWorker(taskQueue, { ...org.env, ACS_BASE_URL: decide.server.url });
    const runId = newRunId(org.name, 'items-for-a-person');
    await startPipelineRun(decideInput(decide.server.url, org, 'items-for-a-person'), runId, { settings: testSettings(), taskQueue });
    const answer = (q: string) => (/^Item \d\?/.test(q) ? `ok ${q}` : undefined);
    // Items 1 and 2 wait (two at once); answer item 1 only, then kill the worker while items 2 and 3 wait.
    await eventually(async () => ((await teamThreads(org)).filter((t) => t.between.includes('ext')).length === 2 ? true : undefined));
    await eventually(async () => ((await answerExt(org, (q) => (q === 'Item 1?' ? answer(q) : undefined))) > 0 ? true : undefined));
    await progressUntil(runId, (p) => entry(p.steps, 'each').items?.[2]?.status === 'running');
    await eventually(async () => ((await teamThreads(org)).filter((t) => t.between.includes('ext')).length === 3 ? true : undefined));
    expect(await child.kill('SIGKILL')).toBe('SIGKILL');
    const worker = await startWorker(taskQueue, { env: org.env });
    stops.push(() => worker.stop());
    const answering = setInterval(() => void answerExt(org, answer).catch(() => undefined), 300);
    try {
      const done = await result(runId);
      expect(done.output).toBe('completed');
      expect(entry(done.steps, 'each').items?.map((i) => [i.item, i.status, i.steps[0]!.reply])).toEqual([1, 2, 3, 4, 5].map((n) => [n, 'completed', `ok Item ${n}?`]));
    } finally {
      clearInterval(answering);
    }
    const threads = (await teamThreads(org)).filter((t) => t.between.includes('ext'));
    expect(threads.map((t) => t.messages).sort((a, b) => a[0]![1].localeCompare(b[0]![1]))).toEqual([1, 2, 3, 4, 5].map((n) => [['dana', `Item ${n}?`], ['ext', `ok Item ${n}?`]]));
  }, 240_000);
});
