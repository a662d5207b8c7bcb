/**
 * The loop in which a pipeline step waits for its reply, shared by both engines: in a Temporal
 * workflow (`pipeline-waits.ts`, woken by the `message` signal, paused by `condition`) and on the
 * local engine (`engine/stream-waits.ts`, woken from the organization's event stream, paused by a
 * timer). What wakes the step differs; what it does when woken is this: take the reply a wake-up
 * brought, else read the thread (every `reconcileEveryMs`, at once after news it cannot judge, and
 * at the deadline), and give up with `timed_out` once the deadline passed without one.
 *
 * Deterministic when its `now` and `pause` are (the workflow's clock and `condition`): no Node API.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { StepReply } from '../activities/conversation-activities.ts';

/** What one wait needs: whom it waits for, until when, and the reconcile read. */
export interface WaitRequest {
  threadId: string;
  /** The step's own message: the reply is the first message of `fromId` after it. */
  sentId: string;
  fromId: string;
  /** When to give up (ms since the epoch, on the caller's clock). */
  deadline: number;
  /** Milliseconds between reconcile reads. */
  reconcileEveryMs: number;
  /** Reads the thread for the reply; null when there is none yet. */
  read(): Promise<StepReply | null>;
}

/** What a wake-up left for the waiting step: the reply itself, or news that it should read its thread. */
export interface WaitingStep {
  reply?: StepReply | undefined;
  read: boolean;
}

/**
 * Waits for `request`'s reply. `pause(ms)` resolves true as soon as `step` holds a reply or
 * `read` (at once when it already does), false after `ms` without either; `now()` is the clock
 * of `deadline`. Output: the reply. Errors: `timed_out` (non-retryable, with details
 * `[{ threadId, messageId }]`) when none came by the deadline; the reads' errors.
 */
export async function awaitReply(step: WaitingStep, request: WaitRequest, pause: (ms: number) => Promise<boolean>, now: () => number): Promise<StepReply> {
  for (;;) {
    const left = request.deadline - now();
    const woken = left > 0 && (await pause(Math.min(request.reconcileEveryMs, left)));
    if (step.reply) return step.reply;
    step.read = false;
    const found = await request.read();
    if (found) return found;
    // News may have come during the read.
    if (step.reply) return step.reply;
    if (!woken && now() >= request.deadline) {
      throw ApplicationFailure.create({
        type: 'timed_out',
        message: `no message from ${request.fromId} in thread ${request.threadId} before the deadline`,
        nonRetryable: true,
        details: [{ threadId: request.threadId, messageId: request.sentId }],
      });
    }
  }
}
