/**
 * What the activities tell a worker's metrics (issue 42; docs/temporal.md, "Metrics"):
 * `teamctl_apply_changes_total{kind, outcome}` and `teamctl_pipeline_steps_total{kind, outcome}`.
 * `teamctl worker --metrics-listen` passes an implementation (worker/metrics.ts) in the
 * activities' dependencies; without it nothing is counted. Every label value is from the fixed
 * lists below: never a name, an id or anything from a definition.
 */

/** The kinds of change an apply makes (`kind` of `teamctl_apply_changes_total`). */
export const ApplyChangeKinds = ['organization', 'team', 'agent', 'human', 'edge', 'provider_key', 'webhook'] as const;
export type ApplyChangeKind = (typeof ApplyChangeKinds)[number];

/** What a change came to once its retries ended: the service's outcome, or `failed` (its retries spent, the apply stops). */
export type ApplyChangeOutcome = 'created' | 'updated' | 'deleted' | 'unchanged' | 'failed';

/**
 * The activities of a pipeline step (`kind` of `teamctl_pipeline_steps_total`): `converse` sends a
 * step's message and long-polls for its reply in one activity (runs that wait by poll), `send`
 * sends it and reads the thread once (runs that wait by push, the run itself waits), `read_reply`
 * is the reconcile read of a step waiting by push.
 */
export const PipelineStepKinds = { converse: 'converse', send: 'send', read_reply: 'read_reply' } as const;
export type PipelineStepKind = (typeof PipelineStepKinds)[keyof typeof PipelineStepKinds];

/**
 * How one such activity ended: `replied` (it returned the reply), `sent` (the message went out and
 * no reply was awaited, or none was there yet), `waiting` (a reconcile read found no reply yet),
 * `timed_out` (the step's deadline passed), `cancelled`, `failed` (an attempt failed; Temporal
 * retries it unless the failure is final).
 */
export type PipelineStepOutcome = 'replied' | 'sent' | 'waiting' | 'timed_out' | 'cancelled' | 'failed';

/** The hooks. */
export interface ActivityMetrics {
  /** One change of `runSteps` ended with `outcome`. */
  applyChange(kind: ApplyChangeKind, outcome: ApplyChangeOutcome): void;
  /** One step activity ended with `outcome`. */
  pipelineStep(kind: PipelineStepKind, outcome: PipelineStepOutcome): void;
}
