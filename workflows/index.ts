/** The workflows a worker registers (the entry of the workflow bundle). */
export { applyWorkflow } from './apply-workflow.ts';
export { pipelineWorkflow } from './pipeline-workflow.ts';
