import { isUniqueViolation } from '../storage/db.ts';
import type { DomainDeps } from '../domain/caller.ts';
import { insertMessage, type MessageRow } from '../domain/threads.ts';
import type { ReplyProvider } from './providers.ts';

/** Where the loop reports; a pino logger fits. */
export interface LoopLogger {
  warn(object: Record<string, unknown>, message: string): void;
  error(object: Record<string, unknown>, message: string): void;
}

/** Options of {@link startAgentLoop}. */
export interface AgentLoopOptions {
  deps: DomainDeps;
  /** Time between the end of one tick and the start of the next, in milliseconds. */
  tickMs: number;
  providers: ReadonlyMap<string, ReplyProvider>;
  log: LoopLogger;
  /**
   * Ping-pong guard: a thread whose last `autoReplyLimit` messages were all automatic replies
   * (two provider agents on one edge answering each other) gets no further automatic reply until
   * someone writes a message by hand. Default 10.
   */
  autoReplyLimit?: number;
  /** Upper bound of the retry delay after provider failures, in milliseconds. Default 300000. */
  maxBackoffMs?: number;
}

const maxContent = 32_768;
// The conversation handed to a provider: the most recent messages only, to bound prompt size.
const contextMessages = 50;

interface Candidate {
  agent_id: string;
  provider: string;
  model: string | null;
  instructions: string;
  ciphertext: string;
  thread_id: string;
  /** The peer message to answer, and its position in the thread. */
  message_id: string;
  message_seq: number;
}

// For each active provider agent whose organization has a key for its provider, and each thread
// on its edges: the oldest message from the peer that the agent has not answered yet (contract §8;
// one reply per incoming message). Answers carry `reply_to`, so "answered" survives restarts.
const candidatesSql = `
  SELECT a.id AS agent_id, a.provider, a.model, a.instructions, pk.ciphertext, th.id AS thread_id,
         m.id AS message_id, m.seq AS message_seq
  FROM participants a
  JOIN teams t ON t.id = a.team_id
  JOIN provider_keys pk ON pk.org_id = t.org_id AND pk.provider = a.provider
  JOIN edges e ON e.participant_a = a.id OR e.participant_b = a.id
  JOIN threads th ON th.edge_id = e.id
  JOIN LATERAL (
    SELECT m.id, m.seq FROM messages m
    WHERE m.thread_id = th.id AND m.sender_id <> a.id
      AND NOT EXISTS (SELECT 1 FROM messages r WHERE r.sender_id = a.id AND r.reply_to = m.id)
      -- ping-pong guard: skip an automatic reply that ends a run of $1 automatic replies
      AND (m.reply_to IS NULL OR m.seq - COALESCE((SELECT max(q.seq) FROM messages q
        WHERE q.thread_id = th.id AND q.seq <= m.seq AND q.reply_to IS NULL), 0) < $1)
    ORDER BY m.seq LIMIT 1
  ) m ON true
  WHERE a.kind = 'agent' AND a.status = 'active'
  ORDER BY th.seq`;

/**
 * Starts the agent loop of contract §8: every `tickMs`, each active agent with a provider whose
 * organization holds a key for it answers, in each thread on its edges, the oldest peer message
 * it has not answered, with one reply from its provider posted as its own message (one reply per
 * incoming message, in order; a burst of messages is answered over consecutive ticks). Each incoming
 * message is answered at most once, also across restarts (unique `(sender_id, reply_to)`).
 * Provider failures are logged without the key and retried with exponential backoff; no error
 * stops the loop. Output: `stop()`, which resolves once the current tick finished.
 */
export function startAgentLoop(options: AgentLoopOptions): { stop(): Promise<void> } {
  const { deps, providers, log } = options;
  const autoReplyLimit = options.autoReplyLimit ?? 10;
  const maxBackoffMs = options.maxBackoffMs ?? 300_000;
  const backoff = new Map<string, { failures: number; retryAt: number }>();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();

  async function answer(candidate: Candidate, provider: ReplyProvider): Promise<void> {
    // The conversation as it stood when the message to answer arrived.
    const recent = (
      await deps.db.query<MessageRow>(`SELECT * FROM messages WHERE thread_id = $1 AND seq <= $2 ORDER BY seq DESC LIMIT $3`, [
        candidate.thread_id,
        candidate.message_seq,
        contextMessages,
      ])
    ).reverse();
    const incoming = recent.at(-1);
    if (!incoming || incoming.id !== candidate.message_id) return;
    const apiKey = deps.secrets.open(candidate.ciphertext);
    if (apiKey.trim() === '') return;
    const conversation = recent.map((m) => ({
      role: m.sender_id === candidate.agent_id ? ('assistant' as const) : ('user' as const),
      content: m.content,
    }));
    let text: string;
    try {
      text = await provider.reply({ apiKey, model: candidate.model, instructions: candidate.instructions, conversation, answering: incoming.content });
    } catch (error) {
      // Scrub the key in case a vendor SDK echoes it in an error message.
      const reason = (error instanceof Error ? error.message : String(error)).split(apiKey).join('[redacted]');
      throw new Error(`provider ${candidate.provider} failed: ${reason}`);
    }
    if (text.trim() === '') throw new Error(`provider ${candidate.provider} returned an empty reply`);
    const posted = await deps.db
      .transaction(async (tx) => {
        const done = await tx.query(`SELECT 1 FROM messages WHERE sender_id = $1 AND reply_to = $2`, [candidate.agent_id, incoming.id]);
        if (done.length > 0) return false;
        await insertMessage(tx, candidate.thread_id, candidate.agent_id, text.slice(0, maxContent), { replyTo: incoming.id });
        return true;
      })
      .catch((error: unknown) => {
        // Another process answered the same message first: that answer stands.
        if (isUniqueViolation(error)) return false;
        throw error;
      });
    if (posted) deps.notifier.publish(candidate.thread_id);
  }

  async function tick(): Promise<void> {
    const candidates = await deps.db.query<Candidate>(candidatesSql, [autoReplyLimit]);
    for (const candidate of candidates) {
      if (stopped) return;
      const provider = providers.get(candidate.provider);
      if (!provider) continue;
      const key = `${candidate.agent_id}:${candidate.thread_id}`;
      const state = backoff.get(key);
      if (state && state.retryAt > Date.now()) continue;
      try {
        await answer(candidate, provider);
        backoff.delete(key);
      } catch (error) {
        const failures = (state?.failures ?? 0) + 1;
        const delay = Math.min(maxBackoffMs, options.tickMs * 2 ** failures);
        backoff.set(key, { failures, retryAt: Date.now() + delay });
        log.warn(
          { agent_id: candidate.agent_id, thread_id: candidate.thread_id, failures, retry_in_ms: delay, reason: (error as Error).message },
          'agent reply failed',
        );
      }
    }
  }

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(() => {
      running = tick()
        .catch((error: unknown) => log.error({ reason: (error as Error).message }, 'agent loop tick failed'))
        .finally(schedule);
    }, options.tickMs);
  }
  schedule();

  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
