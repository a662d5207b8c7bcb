/**
 * Progress of `wait_for_messages` while a peer's reply is being written (§13): an MCP client that
 * sends a progress token with the call is sent `notifications/progress` as the deltas of a reply in
 * one of the agent's threads come (the thread it waits on, or its 100 most recent), each saying how
 * much has been written; the messages themselves still come whole, as the tool's result.
 */
import { listAgentThreads, type AgentIdentity } from '../domain/agent-inbox.ts';
import type { DomainDeps } from '../domain/caller.ts';
import { liveKey, type StreamPosition } from '../events/deltas.ts';
import { readStreamItems, streamEnd } from '../events/thread-stream.ts';

/** Most threads followed for one wait without a `thread_id`. */
const maxFollowedThreads = 100;

/**
 * Follows the live items of the agent's threads (or of `threadId`) from now on and calls `notify`
 * with the characters of peers' replies written so far and a line saying where. Output: the stop
 * function (call it when the wait ends). Errors: none after it resolved (a failed read is skipped).
 */
export async function followReplyProgress(
  deps: DomainDeps,
  agent: AgentIdentity,
  threadId: string | undefined,
  notify: (progress: number, message: string) => void,
): Promise<() => void> {
  const threads = threadId !== undefined ? [threadId] : (await listAgentThreads(deps, agent, {})).threads.slice(0, maxFollowedThreads).map((t) => t.thread_id);
  let written = 0;
  let stopped = false;
  const stops: Array<() => void> = [];
  for (const thread of threads) {
    let position: StreamPosition = (await streamEnd(deps.db, thread)) ?? { after: 0, k: 0 };
    let reading = false;
    const read = async () => {
      if (reading || stopped) return;
      reading = true;
      try {
        const items = await readStreamItems(deps.db, thread, position);
        for (const item of items) {
          position = item.position;
          if (item.type !== 'message.delta' || item.data['sender_id'] === agent.agentId) continue;
          written += String(item.data['text'] ?? '').length;
          if (!stopped) notify(written, `a reply is being written in thread ${thread} (${written} characters so far)`);
        }
      } catch {
        // A read that failed is tried again at the next signal.
      } finally {
        reading = false;
      }
    };
    stops.push(deps.events.onSignal(liveKey(thread), () => void read()));
  }
  return () => {
    stopped = true;
    for (const stop of stops) stop();
  };
}
