/**
 * The final states of a task (contract §12, A2A v1.0's spelling): a task in one of them changes no
 * more. A module of its own, with no imports, so that the pipeline workflow (deterministic, bundled
 * apart) and the activities share it.
 */
export const FINAL_TASK_STATES: readonly string[] = ['completed', 'failed', 'canceled', 'rejected'];

/**
 * Attempts in all (the first included) of the cancel of a task that a run no longer waits for (a
 * cancelled run, a step past its `timeout`), on both engines: the cancel is best effort, and a
 * service that keeps failing should not hold the run's end for the minutes of the full retry policy.
 */
export const TASK_CANCEL_ATTEMPTS = 3;
