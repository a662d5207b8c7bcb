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
import { Runtime, DefaultLogger, Worker } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { workflowsPath } from '../../worker/worker.ts';
import { APPLY_PATCHES } from '../../workflows/apply-workflow.ts';

const dir = fileURLToPath(new URL('./histories/', import.meta.url));
const files = readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
const histories = () => files.map((f) => ({ workflowId: f.replace(/\.json$/, ''), history: historyFromJSON(JSON.parse(readFileSync(join(dir, f), 'utf8'))) }));

beforeAll(() => {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
});

describe('replay', () => {
  it('replay: the recorded histories cover creating, a no-op, deletes with a rename, destroy, continue-as-new and a failure of apply (before and after its patches), and pipelines completed, continued as new, answered by a human and cancelled', () => {
    expect(files).toEqual([
      'apply-continue-as-new-batched.json',
      'apply-continue-as-new.json',
      'apply-deletes-and-rename-batched.json',
      'apply-deletes-and-rename.json',
      'apply-example-create-batched.json',
      'apply-example-create.json',
      'apply-example-no-op-batched.json',
      'apply-example-no-op.json',
      'apply-fails-unresolved-secret-batched.json',
      'apply-fails-unresolved-secret.json',
      'destroy-example-batched.json',
      'destroy-example.json',
      'pipeline-approval.json',
      'pipeline-cancelled.json',
      'pipeline-continue-as-new.json',
      'pipeline-triage.json',
    ]);
    const last = (name: string) => histories().find((h) => h.workflowId === name)!.history.events!.at(-1)!;
    expect(last('apply-continue-as-new').workflowExecutionContinuedAsNewEventAttributes).toBeTruthy();
    expect(last('apply-fails-unresolved-secret').workflowExecutionFailedEventAttributes).toBeTruthy();
    expect(last('apply-example-create').workflowExecutionCompletedEventAttributes).toBeTruthy();
    expect(last('apply-deletes-and-rename').workflowExecutionCompletedEventAttributes).toBeTruthy();
    expect(last('destroy-example').workflowExecutionCompletedEventAttributes).toBeTruthy();
    expect(last('pipeline-triage').workflowExecutionCompletedEventAttributes).toBeTruthy();
    expect(last('pipeline-approval').workflowExecutionCompletedEventAttributes).toBeTruthy();
    expect(last('pipeline-continue-as-new').workflowExecutionContinuedAsNewEventAttributes).toBeTruthy();
    expect(last('pipeline-cancelled').workflowExecutionCanceledEventAttributes).toBeTruthy();
    // The apply histories of before and after the patches of APPLY_PATCHES (batched team reads,
    // chained batches): the old ones replay down the old path, the -batched ones down the new.
    expect(last('apply-continue-as-new-batched').workflowExecutionContinuedAsNewEventAttributes).toBeTruthy();
    expect(last('apply-fails-unresolved-secret-batched').workflowExecutionFailedEventAttributes).toBeTruthy();
    for (const name of ['apply-example-create-batched', 'apply-example-no-op-batched', 'apply-deletes-and-rename-batched', 'destroy-example-batched']) {
      expect(last(name).workflowExecutionCompletedEventAttributes, name).toBeTruthy();
    }
    const patches = (name: string) =>
      histories()
        .find((h) => h.workflowId === name)!
        .history.events!.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch').length;
    for (const name of files.map((f) => f.replace(/\.json$/, '')).filter((n) => n.startsWith('apply-') || n.startsWith('destroy-'))) {
      expect(patches(name), name).toBe(name.endsWith('-batched') ? Object.keys(APPLY_PATCHES).length : 0);
    }
  });

  it('replay: every recorded history replays against the current workflow code without a determinism error', async () => {
    const results = [];
    for await (const result of Worker.runReplayHistories({ workflowsPath, replayName: 'replay-current' }, histories())) results.push(result);
    expect(results.map((r) => [r.workflowId, r.error?.message])).toEqual(files.map((f) => [f.replace(/\.json$/, ''), undefined]));
  }, 120_000);

  it('replay: a workflow that schedules its activities in another order fails the replay of every recorded history', async () => {
    const altered = fileURLToPath(new URL('./fixtures/altered-workflows.ts', import.meta.url));
    const results = [];
    for await (const result of Worker.runReplayHistories({ workflowsPath: altered, replayName: 'replay-altered' }, histories())) results.push(result);
    for (const r of results) expect(r.error?.name, r.workflowId).toBe('DeterminismViolationError');
  }, 120_000);
});
