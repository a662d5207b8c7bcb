/**
 * The final states of a task (contract §12, A2A v1.0's spelling): a task in one of them changes no
 * more. A module of its own, with no imports, so that the pipeline workflow (deterministic, bundled
 * apart) and the activities share it.
 */
export const FINAL_TASK_STATES: readonly string[] = ['completed', 'failed', 'canceled', 'rejected'];
