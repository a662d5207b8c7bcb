/**
 * Replay of apply- and pipeline-workflow histories recorded from a real Temporal server
 * (test/workflows/histories, written by `npm run histories:record`). Needs no server, so it runs
 * in every `npm test`: a change to a workflow that would break histories already recorded — and
 * so workflows running in production — fails here. Changes that must differ go through
 * `patched()` and new recordings.
 *
 * The apply histories were recorded again when the apply workflow's input changed shape (the
 * desired state in the service's field names, from one declaration per resource; creates, patches
 * and deletes as three generic activities). An old history cannot replay against that: its input
 * itself is of the old shape, which no `patched()` branch can turn into the new one. No apply of an
 * earlier version runs anywhere — teamctl has not been released — so the old files were replaced
 * rather than kept beside a second code path. Once released, such a change needs a new workflow
 * type (or an input version field), and the old histories stay.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { Worker } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { workflowBundlerOptions, workflowsPath } from '../../worker/worker.ts';
import { APPLY_PATCHES } from '../../workflows/apply-workflow.ts';
import { installQuietRuntime } from '../support/quiet-temporal.ts';

const dir = fileURLToPath(new URL('./histories/', import.meta.url));
const files = readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
/**
 * The recorded histories. A file may say its workflow's id (`workflowId` beside the events), which
 * a workflow that derives ids from its own (a child workflow's) needs to replay; the others replay
 * under their file's name.
 */
const histories = () =>
  files.map((f) => {
    const { workflowId, ...history } = JSON.parse(readFileSync(join(dir, f), 'utf8')) as { workflowId?: string };
    return { name: f.replace(/\.json$/, ''), workflowId: workflowId ?? f.replace(/\.json$/, ''), history: historyFromJSON(history) };
  });

// Replaying a history against changed code fails on purpose below; the SDK's warnings stay out of the report.
beforeAll(() => {
  installQuietRuntime();
});

describe('replay', () => {
  it('replay: the recorded histories cover creating, a no-op, deletes with a rename, destroy, continue-as-new and a failure of apply (before and after each of its patches), and pipelines completed, continued as new, answered by a human and cancelled, polling and waiting by push, task steps completed, cancelled, timed out and waiting in a run that failed', () => {
    expect(files).toEqual([
      'apply-continue-as-new-batched.json',
      'apply-continue-as-new-cross-team.json',
      'apply-continue-as-new-plan-activity.json',
      'apply-continue-as-new.json',
      'apply-cross-team-batches.json',
      'apply-deletes-and-rename-batched.json',
      'apply-deletes-and-rename-cross-team.json',
      'apply-deletes-and-rename-plan-activity.json',
      'apply-deletes-and-rename.json',
      'apply-example-create-batched.json',
      'apply-example-create-cross-team.json',
      'apply-example-create-plan-activity.json',
      'apply-example-create.json',
      'apply-example-no-op-batched.json',
      'apply-example-no-op-cross-team.json',
      'apply-example-no-op-plan-activity.json',
      'apply-example-no-op.json',
      'apply-fails-unresolved-secret-batched.json',
      'apply-fails-unresolved-secret-cross-team.json',
      'apply-fails-unresolved-secret-plan-activity.json',
      'apply-fails-unresolved-secret.json',
      'destroy-example-batched.json',
      'destroy-example-cross-team.json',
      'destroy-example-plan-activity.json',
      'destroy-example.json',
      'pipeline-approval.json',
      'pipeline-branch-skipped.json',
      'pipeline-cancelled.json',
      'pipeline-continue-as-new.json',
      'pipeline-loop-3.json',
      'pipeline-map-5.json',
      'pipeline-poll-patched.json',
      'pipeline-push-approval.json',
      'pipeline-push-cancelled.json',
      'pipeline-push-reask.json',
      'pipeline-push-reconciled.json',
      'pipeline-push-timeout.json',
      'pipeline-sleep.json',
      'pipeline-sub-pipeline.json',
      'pipeline-task-cancelled.json',
      'pipeline-task-parallel-failed.json',
      'pipeline-task-step.json',
      'pipeline-task-timeout.json',
      'pipeline-triage.json',
      'pipeline-typed-reask.json',
    ]);
    const last = (name: string) => histories().find((h) => h.name === name)!.history.events!.at(-1)!;
    expect(last('apply-continue-as-new').workflowExecutionContinuedAsNewEventAttributes).toBeTruthy();
    expect(last('apply-fails-unresolved-secret').workflowExecutionFailedEventAttributes).toBeTruthy();
    expect(last('apply-example-create').workflowExecutionCompletedEventAttributes).toBeTruthy();
    expect(last('apply-deletes-and-rename').workflowExecutionCompletedEventAttributes).toBeTruthy();
    expect(last('destroy-example').workflowExecutionCompletedEventAttributes).toBeTruthy();
    expect(last('pipeline-triage').workflowExecutionCompletedEventAttributes).toBeTruthy();
    expect(last('pipeline-approval').workflowExecutionCompletedEventAttributes).toBeTruthy();
    expect(last('pipeline-continue-as-new').workflowExecutionContinuedAsNewEventAttributes).toBeTruthy();
    expect(last('pipeline-cancelled').workflowExecutionCanceledEventAttributes).toBeTruthy();
    // The apply histories of before and after the patches of APPLY_PATCHES: the old ones replay
    // down the old path, the -batched ones with batched reads and chained batches, the
    // -plan-activity ones also recording their plan with an activity instead of a timer, the
    // -cross-team ones (and apply-cross-team-batches) also batching several teams in one call.
    for (const suffix of ['-batched', '-plan-activity', '-cross-team']) {
      expect(last(`apply-continue-as-new${suffix}`).workflowExecutionContinuedAsNewEventAttributes).toBeTruthy();
      expect(last(`apply-fails-unresolved-secret${suffix}`).workflowExecutionFailedEventAttributes).toBeTruthy();
      for (const name of ['apply-example-create', 'apply-example-no-op', 'apply-deletes-and-rename', 'destroy-example']) {
        expect(last(`${name}${suffix}`).workflowExecutionCompletedEventAttributes, `${name}${suffix}`).toBeTruthy();
      }
    }
    const events = (name: string) => histories().find((h) => h.name === name)!.history.events!;
    const patches = (name: string) => events(name).filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch').length;
    const timers = (name: string) => events(name).filter((e) => e.timerStartedEventAttributes).length;
    const planRecorded = (name: string) => events(name).filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'planRecorded').length;
    // Runs with changes to make: the ones of the plan-activity patch, and the timer of before it.
    const withChanges = ['apply-example-create', 'apply-deletes-and-rename', 'destroy-example', 'apply-continue-as-new', 'apply-cross-team-batches'];
    for (const name of files.map((f) => f.replace(/\.json$/, '')).filter((n) => n.startsWith('apply-') || n.startsWith('destroy-'))) {
      const base = name.replace(/-(batched|plan-activity|cross-team)$/, '');
      const planned = withChanges.includes(base);
      if (name.endsWith('-cross-team') || name === 'apply-cross-team-batches') {
        expect({ patches: patches(name), planRecorded: planRecorded(name), timers: timers(name) }, name).toEqual({ patches: planned ? 4 : 2, planRecorded: planned ? 1 : 0, timers: 0 });
      } else if (name.endsWith('-plan-activity')) {
        expect({ patches: patches(name), planRecorded: planRecorded(name), timers: timers(name) }, name).toEqual({ patches: planned ? 3 : 2, planRecorded: planned ? 1 : 0, timers: 0 });
      } else {
        expect({ patches: patches(name), planRecorded: planRecorded(name), timers: timers(name) }, name).toEqual({ patches: name.endsWith('-batched') ? 2 : 0, planRecorded: 0, timers: planned ? 1 : 0 });
      }
    }
    // A call of apply-cross-team-batches made three teams of 6 changes each.
    const batchSizes = events('apply-cross-team-batches')
      .filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity')
      .map((e) => JSON.parse(Buffer.from(e.markerRecordedEventAttributes!.details!.result!.payloads![0]!.data!).toString()))
      .filter((result): result is unknown[] => Array.isArray(result))
      .map((result) => result.length);
    expect(Math.max(...batchSizes)).toBe(18);
    expect(Object.keys(APPLY_PATCHES)).toHaveLength(4);
  });

  it('replay: the pipelines that decide were recorded doing what they say: a re-ask, a branch skipped, 3 iterations, 5 items, a child workflow, a timer', () => {
    const events = (name: string) => histories().find((h) => h.name === name)!.history.events!;
    /** The step ids of the `converse` activities a history scheduled, in order. */
    const converse = (name: string) =>
      events(name)
        .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'converse')
        .map((e) => (JSON.parse(Buffer.from(e.activityTaskScheduledEventAttributes!.input!.payloads![0]!.data!).toString('utf8')) as { stepId: string }).stepId);
    for (const name of ['pipeline-typed-reask', 'pipeline-branch-skipped', 'pipeline-loop-3', 'pipeline-map-5', 'pipeline-sub-pipeline', 'pipeline-sleep']) {
      expect(events(name).at(-1)!.workflowExecutionCompletedEventAttributes, name).toBeTruthy();
    }
    expect(converse('pipeline-typed-reask')).toEqual(['ask', 'ask#2', 'go']);
    expect(converse('pipeline-branch-skipped')).toEqual(['queue']);
    expect(converse('pipeline-loop-3')).toEqual(['rounds@0/draft', 'rounds@1/draft', 'rounds@2/draft']);
    expect(converse('pipeline-map-5').sort()).toEqual(['each[0]/handle', 'each[1]/handle', 'each[2]/handle', 'each[3]/handle', 'each[4]/handle']);
    expect(converse('pipeline-sub-pipeline')).toEqual([]);
    expect(events('pipeline-sub-pipeline').find((e) => e.startChildWorkflowExecutionInitiatedEventAttributes)!.startChildWorkflowExecutionInitiatedEventAttributes!.workflowId).toBe(
      'teamctl-run/recorded-decide/sub-pipeline/notify',
    );
    expect(events('pipeline-sleep').filter((e) => e.timerStartedEventAttributes)).toHaveLength(1);
    expect(converse('pipeline-sleep')).toEqual(['after']);
  });

  it('replay: the waits that hold nothing were recorded doing what they say: a reply by signal, a re-ask by signal again, a reconcile read, a timeout, a cancellation; the polling run with the patch', () => {
    const events = (name: string) => histories().find((h) => h.name === name)!.history.events!;
    const activities = (name: string) => events(name).flatMap((e) => (e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType!.name] : []));
    const count = (name: string, has: (e: ReturnType<typeof events>[number]) => unknown) => events(name).filter((e) => has(e)).length;
    const awaitingUpserts = (name: string) =>
      count(name, (e) => Object.keys(e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {}).includes('TeamctlAwaitingThreads'));
    for (const name of ['pipeline-push-approval', 'pipeline-push-reask', 'pipeline-push-reconciled', 'pipeline-push-cancelled', 'pipeline-push-timeout']) {
      expect(activities(name), name).toEqual(['resolveTeam']);
      expect(awaitingUpserts(name), name).toBe(1);
    }
    expect(events('pipeline-push-approval').at(-1)!.workflowExecutionCompletedEventAttributes).toBeTruthy();
    expect(count('pipeline-push-approval', (e) => e.workflowExecutionSignaledEventAttributes)).toBe(1);
    expect(events('pipeline-push-reask').at(-1)!.workflowExecutionCompletedEventAttributes).toBeTruthy();
    expect(count('pipeline-push-reask', (e) => e.workflowExecutionSignaledEventAttributes)).toBe(2);
    expect(count('pipeline-push-reconciled', (e) => e.workflowExecutionSignaledEventAttributes)).toBe(0);
    expect(count('pipeline-push-reconciled', (e) => e.timerFiredEventAttributes)).toBeGreaterThan(0);
    expect(events('pipeline-push-cancelled').at(-1)!.workflowExecutionCanceledEventAttributes).toBeTruthy();
    expect(events('pipeline-push-timeout').at(-1)!.workflowExecutionFailedEventAttributes?.failure?.cause?.applicationFailureInfo?.type ?? events('pipeline-push-timeout').at(-1)!.workflowExecutionFailedEventAttributes?.failure?.applicationFailureInfo?.type).toBe('timed_out');
    expect(activities('pipeline-poll-patched')).toEqual(['resolveTeam', 'converse']);
    expect(count('pipeline-poll-patched', (e) => e.markerRecordedEventAttributes?.markerName === 'core_patch')).toBe(1);
  });

  it('replay: the task steps were recorded doing what they say: each task created by a local activity, awaited by an awaitTask activity, the typed value and the task id passed on', () => {
    const events = histories().find((h) => h.name === 'pipeline-task-step')!.history.events!;
    const payload = (p: { data?: Uint8Array | null } | undefined) => JSON.parse(Buffer.from(p!.data!).toString('utf8')) as Record<string, unknown>;
    expect(events.flatMap((e) => (e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType!.name] : []))).toEqual(['resolveTeam', 'awaitTask', 'awaitTask']);
    const created = events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity').map((e) => payload(e.markerRecordedEventAttributes!.details!.result!.payloads![0]));
    expect(created.map((c) => c['state'])).toEqual(['submitted', 'submitted']);
    const result = payload(events.at(-1)!.workflowExecutionCompletedEventAttributes!.result!.payloads![0]) as { output: string; steps: Array<{ id: string; task_id: string; value: unknown }> };
    expect(result.output).toBe('approve');
    expect(result.steps.map((s) => [s.id, s.task_id])).toEqual([
      ['ask', created[0]!['taskId']],
      ['noted', created[1]!['taskId']],
    ]);
    expect(result.steps[1]!.value).toBe(`echo: Noted: approve (task ${String(created[0]!['taskId'])})`);
  });

  it('replay: the task steps the run stopped waiting for were recorded doing what they say: cancelled, past its timeout, and waiting when a parallel member failed the run, each run cancelled its tasks (local activities under the patches) before it ended', () => {
    const events = (name: string) => histories().find((h) => h.name === name)!.history.events!;
    const payload = (p: { data?: Uint8Array | null } | undefined) => JSON.parse(Buffer.from(p!.data!).toString('utf8')) as Record<string, unknown>;
    /** The history's patch ids and local activities, in order. */
    const markers = (name: string) =>
      events(name).flatMap((e) => {
        const marker = e.markerRecordedEventAttributes;
        if (marker?.markerName === 'core_patch') return [`patch ${String(payload(marker.details!['patch-data']!.payloads![0])['id'])}`];
        if (marker?.markerName === 'core_local_activity') return [String(payload(marker.details!['data']!.payloads![0])['activity_type'])];
        return [];
      });
    const activities = (name: string) => events(name).flatMap((e) => (e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType!.name] : []));
    for (const name of ['pipeline-task-cancelled', 'pipeline-task-timeout']) {
      expect(markers(name), name).toEqual(['patch pipeline-waits-in-workflow', 'createStepTask', 'patch pipeline-cancel-open-tasks', 'cancelStepTask']);
      expect(activities(name), name).toEqual(['resolveTeam', 'awaitTask']);
    }
    // The cancel came after the cancellation was asked for, and ended the task: the run ended cancelled.
    const cancelled = events('pipeline-task-cancelled');
    expect(cancelled.findIndex((e) => e.workflowExecutionCancelRequestedEventAttributes)).toBeLessThan(cancelled.findIndex((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity' && payload(e.markerRecordedEventAttributes.details!['data']!.payloads![0])['activity_type'] === 'cancelStepTask'));
    const cancelResult = (name: string) => payload(events(name).filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity').at(-1)!.markerRecordedEventAttributes!.details!['result']!.payloads![0]);
    expect(cancelResult('pipeline-task-cancelled')).toMatchObject({ canceled: true });
    expect(cancelled.at(-1)!.workflowExecutionCanceledEventAttributes).toBeTruthy();
    // Past its timeout: the step failed timed_out as before the cancel existed.
    const timedOut = events('pipeline-task-timeout');
    expect(cancelResult('pipeline-task-timeout')).toMatchObject({ canceled: true });
    const failure = timedOut.at(-1)!.workflowExecutionFailedEventAttributes!.failure!;
    expect(failure.cause?.applicationFailureInfo?.type ?? failure.applicationFailureInfo?.type).toBe('timed_out');
    // A parallel member past its timeout failed the run while its sibling waited on a task: under
    // the patch pipeline-cancel-tasks-at-end, the run cancelled both tasks, and failed timed_out.
    expect(markers('pipeline-task-parallel-failed')).toEqual([
      'patch pipeline-waits-in-workflow',
      'patch pipeline-cancel-tasks-at-end',
      'createStepTask',
      'createStepTask',
      'patch pipeline-cancel-open-tasks',
      'cancelStepTask',
      'cancelStepTask',
    ]);
    expect(activities('pipeline-task-parallel-failed')).toEqual(['resolveTeam', 'awaitTask', 'awaitTask']);
    const parallelCancels = events('pipeline-task-parallel-failed')
      .filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity')
      .slice(-2)
      .map((e) => payload(e.markerRecordedEventAttributes!.details!['result']!.payloads![0]));
    expect(parallelCancels).toEqual([expect.objectContaining({ canceled: true }), expect.objectContaining({ canceled: true })]);
    const parallelFailure = events('pipeline-task-parallel-failed').at(-1)!.workflowExecutionFailedEventAttributes!.failure!;
    expect(parallelFailure.cause?.applicationFailureInfo?.type ?? parallelFailure.applicationFailureInfo?.type).toBe('timed_out');
  });

  it('replay: every recorded history replays against the current workflow code without a determinism error', async () => {
    const results = [];
    for await (const result of Worker.runReplayHistories({ workflowsPath, bundlerOptions: workflowBundlerOptions, replayName: 'replay-current' }, histories())) results.push(result);
    expect(results.map((r) => [r.workflowId, r.error?.message])).toEqual(histories().map((h) => [h.workflowId, undefined]));
  }, 120_000);

  it('replay: a workflow that schedules its activities in another order fails the replay of every recorded history', async () => {
    const altered = fileURLToPath(new URL('./fixtures/altered-workflows.ts', import.meta.url));
    const results = [];
    for await (const result of Worker.runReplayHistories({ workflowsPath: altered, replayName: 'replay-altered' }, histories())) results.push(result);
    for (const r of results) expect(r.error?.name, r.workflowId).toBe('DeterminismViolationError');
  }, 120_000);
});
