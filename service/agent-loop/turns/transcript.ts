/**
 * What a turn's model is given at each step (contract §11): the thread as the agent saw it when the
 * message it answers arrived, then, step by step, the model's own messages and the results of the
 * tool calls they asked for — rebuilt from storage, so a turn resumed by another process gives its
 * model exactly what the first process would have.
 */
import type { ToolCallRow } from '../../domain/tool-calls.ts';

/** A message of the thread as the agent sees it: its own as `assistant`, its peer's as `user`. */
export interface ContextMessage {
  role: 'user' | 'assistant';
  content: string;
}

/** The result part of one call, as the AI SDK's `ToolResultPart` (JSON): the result, or the error as text. */
function resultPart(call: ToolCallRow): Record<string, unknown> {
  const output =
    call.status === 'completed'
      ? { type: 'json', value: call.result ?? null }
      : { type: 'error-text', value: call.error ?? `${call.status}: the call did not complete` };
  return { type: 'tool-result', toolCallId: call.model_call_id, toolName: call.model_name, output };
}

/**
 * The messages of the next step: the thread (`context`, oldest first), then for each finished step
 * its assistant messages (`transcript[i]`) and one tool message with the results of that step's
 * calls, in the model's order. Calls not finished yet are left out (a step is asked for only once
 * every call of the previous one has finished). Output: AI SDK `ModelMessage`s as JSON.
 */
export function stepMessages(context: readonly ContextMessage[], transcript: readonly unknown[][], calls: readonly ToolCallRow[]): unknown[] {
  const messages: unknown[] = context.map((m) => ({ role: m.role, content: m.content }));
  transcript.forEach((assistant, i) => {
    messages.push(...assistant);
    const results = calls.filter((c) => c.step === i + 1 && (c.status === 'completed' || c.status === 'failed' || c.status === 'rejected')).sort((a, b) => a.idx - b.idx);
    if (results.length > 0) messages.push({ role: 'tool', content: results.map(resultPart) });
  });
  return messages;
}

/** What a reply stopped before it had any text says instead (a message is never empty). */
export const emptyStoppedReply = '(stopped before any reply was written)';

/** The text a stopped reply is posted with: what was written so far, or {@link emptyStoppedReply}. */
export function stoppedText(text: string): string {
  return text.trim() === '' ? emptyStoppedReply : text;
}
