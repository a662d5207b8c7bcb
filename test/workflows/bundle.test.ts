import { bundleWorkflowCode } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { workflowBundlerOptions, workflowsPath } from '../../worker/worker.ts';

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

  it('workflow bundle: the protobuf descriptors CEL builds are evaluated by the preload function, once per workflow thread, not by each workflow', async () => {
    const bundle = await bundleWorkflowCode({ workflowsPath, ...workflowBundlerOptions, logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} } as never });
    const preload = /exports\.preloadModules = function preloadModules\(\) \{([^}]*)\}/.exec(bundle.code)?.[1] ?? '';
    expect(preload).toContain('"./workflows/preloaded.ts"');
    // The bundler drops an import it deems side-effect free: the preloaded module must still require each module.
    const start = bundle.code.indexOf('/***/ "./workflows/preloaded.ts"');
    const body = bundle.code.slice(start, bundle.code.indexOf('/***/ },', start));
    for (const module of ['@bufbuild/cel-spec/dist/esm/gen/cel/expr/checked_pb.js', '@bufbuild/cel-spec/dist/esm/gen/cel/expr/syntax_pb.js', '@bufbuild/protobuf/dist/esm/wkt/index.js']) {
      expect(body).toContain(`"./node_modules/${module}"`);
    }
  }, 120_000);
});
