import { bundleWorkflowCode } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { workflowsPath } from '../../worker/worker.ts';

describe('workflow bundle', () => {
  it('workflow bundle: builds from workflows/index.ts and contains applyWorkflow', async () => {
    const bundle = await bundleWorkflowCode({ workflowsPath, logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} } as never });
    expect(bundle.code).toContain('applyWorkflow');
    expect(bundle.code).toContain('orchestrateApply');
  }, 120_000);

  it('workflow bundle: the pipeline workflow evaluates CEL and checks JSON Schemas itself (both libraries are in the bundle), and carries no Zod', async () => {
    const bundle = await bundleWorkflowCode({ workflowsPath, logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} } as never });
    expect(bundle.code).toMatch(/node_modules\/@bufbuild\/cel\//);
    expect(bundle.code).toMatch(/node_modules\/ajv\/dist\/2020\.js/);
    expect(bundle.code).not.toMatch(/node_modules\/zod\//);
  }, 120_000);
});
