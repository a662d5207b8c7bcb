/**
 * What one claimed row's work in the agent loop came to, for the metrics (`acs_agent_turns_total`,
 * `acs_agent_turn_duration_seconds`, `acs_provider_tokens_total`). The loop (agent-loop.ts) makes
 * one watch per claimed row when the process has metrics, hands the provider through
 * {@link TurnWatch.meter} (every call's tokens counted), tells it the outcome where it learns it,
 * and ends it when the row's work ends: a reply is counted then, once, with the time it took.
 */
import type { ProviderReply, ReplyProvider, ReplyRequest, StepReply, StepRequest, TokenUsage } from '../agent-loop/providers/types.ts';
import type { Queryable } from '../storage/db.ts';
import { TurnOutcomes, type ServiceMetrics, type TurnOutcome } from './hooks.ts';

/** The watch of one claimed row. */
export interface TurnWatch {
  /** `provider` with the tokens of each of its calls counted under `name` (a paid failure's too). */
  meter(provider: ReplyProvider, name: string): ReplyProvider;
  /** How the reply ended; the last word counts (a failure after a step, say). */
  outcome(outcome: TurnOutcome): void;
  /**
   * After a run of a turn with tools that reported no failure: whether it ended the turn (and
   * how) is read from the turn's row — one indexed query, only when the run called its provider.
   * A turn that waits for an answer or an approval is not counted until a later run ends it.
   */
  afterToolTurn(db: Queryable, agentId: string, threadId: string): Promise<void>;
  /** Counts the reply, when it has an outcome; idempotent. */
  end(): void;
}

/** Starts the watch of one claimed row (its clock starts now). */
export function watchTurn(metrics: ServiceMetrics): TurnWatch {
  const started = performance.now();
  let provider: string | undefined;
  let result: TurnOutcome | undefined;
  let calls = 0;
  let ended = false;
  const count = (name: string, usage: TokenUsage | undefined) => {
    if (usage) metrics.providerTokens(name, usage.inputTokens, usage.outputTokens);
  };
  /** Runs one provider call, counting its tokens (those of a paid failure too). */
  async function metered<T extends ProviderReply | StepReply>(name: string, call: () => Promise<T>): Promise<T> {
    provider = name;
    try {
      const reply = await call();
      calls += 1;
      count(name, reply.usage);
      return reply;
    } catch (error) {
      count(name, (error as { paid?: { usage: TokenUsage } }).paid?.usage);
      throw error;
    }
  }
  return {
    meter(inner, name) {
      return {
        reply: (request: ReplyRequest) => metered(name, () => inner.reply(request)),
        ...(inner.step ? { step: (request: StepRequest) => metered(name, () => inner.step!(request)) } : {}),
      };
    },
    outcome(outcome) {
      result = outcome;
    },
    async afterToolTurn(db, agentId, threadId) {
      if (result !== undefined || calls === 0) return;
      const [turn] = await db.query<{ state: string }>(`SELECT state FROM agent_turns WHERE agent_id = $1 AND thread_id = $2 ORDER BY created_at DESC LIMIT 1`, [agentId, threadId]);
      if (turn?.state === 'completed') result = TurnOutcomes.replied;
      else if (turn?.state === 'failed') result = TurnOutcomes.failed;
    },
    end() {
      if (ended || result === undefined || provider === undefined) return;
      ended = true;
      metrics.agentTurn(provider, result, (performance.now() - started) / 1000);
    },
  };
}
