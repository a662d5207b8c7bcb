import { bundleWorkflowCode } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { workflowsPath } from '../../worker/worker.ts';

describe('workflow bundle', () => {
  it('workflow bundle: builds from workflows/index.ts and contains applyWorkflow', async () => {
    const bundle = await bundleWorkflowCode({ workflowsPath, logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} } as never });
    expect(bundle.code).toContain('applyWorkflow');
    expect(bundle.code).toContain('orchestrateApply');
  }, 120_000);
});
