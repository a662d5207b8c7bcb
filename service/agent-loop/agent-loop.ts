/**
 * The agent loop of contract §8: agents with a provider answer their peers' messages.
 *
 * Work lives in the database (`agent_work`, migration 0009): one row per (provider agent, thread on
 * its edges) with a high-water mark, kept current by an insert trigger on messages. A process
 * claims due rows (`FOR UPDATE SKIP LOCKED`, then a lease: the row's `due_at` moves to the lease's
 * end and it carries the claim's token), so several processes on one PostgreSQL database never
 * work on the same thread at once and a provider is called once per incoming message; a process
 * that dies gives its rows up when their leases end. Only rows with work are in the claim's index,
 * so a tick costs the same with 10 or 10,000 idle threads. See service/README.md.
 */
import { randomUUID } from 'node:crypto';
import { ServiceError } from '../../errors/catalogue.ts';
import type { DomainDeps } from '../domain/caller.ts';
import { newId } from '../domain/ids.ts';
import { insertMessage } from '../domain/threads.ts';
import type { Queryable } from '../storage/db.ts';
import { isUniqueViolation } from '../storage/db.ts';
import { redactKey } from './providers/redact-key.ts';
import { ProviderFailure, type ProviderReply, type ReplyProvider, type Turn } from './providers/types.ts';

/** Where the loop reports; a pino logger fits. */
export interface LoopLogger {
  info(object: Record<string, unknown>, message: string): void;
  warn(object: Record<string, unknown>, message: string): void;
  error(object: Record<string, unknown>, message: string): void;
}

/** Options of {@link startAgentLoop}. */
export interface AgentLoopOptions {
  deps: DomainDeps;
  /** Time between two looks for due work when there is none, in milliseconds. */
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
  /** Provider calls in flight at once in this process. Default 8. */
  concurrency?: number;
  /** Longest provider call, in milliseconds; it is aborted then and retried with backoff. Default 120000. */
  callTimeoutMs?: number;
  /**
   * How much longer than a call's timeout a claim lasts, in milliseconds (default 30000): a row
   * whose process died is taken over after `callTimeoutMs + leaseMarginMs`.
   */
  leaseMarginMs?: number;
  /** Aborts calls in flight (the service shutting down); `stop()` does too. */
  signal?: AbortSignal;
}

/** The running loop. */
export interface AgentLoop {
  /** Stops claiming, aborts calls in flight, gives their rows back, and resolves once all ended. */
  stop(): Promise<void>;
}

/** The contract's longest message (§1): a longer reply is cut there. */
const maxContent = 32_768;
// The conversation handed to a provider: the most recent messages only, to bound prompt size.
const contextMessages = 50;

/** What the loop needs to know about the agent of a claimed row (read with the claim). */
export interface AgentContext {
  kind: string;
  name: string;
  status: string;
  provider: string | null;
  model: string | null;
  instructions: string;
  max_tokens_per_day: number | null;
  team_id: string;
  org_id: string;
  ciphertext: string | null;
  refused: boolean;
  /** Tokens counted against the budget in the current UTC day. */
  tokens_today: number;
  /** The start of the next UTC day, by the database's clock. */
  next_day: Date;
}

/** A claimed work row, with its agent (null when the agent is gone). */
export interface Claim {
  agent_id: string;
  thread_id: string;
  handled_seq: number;
  latest_seq: number;
  failures: number;
  token: string;
  agent: AgentContext | null;
}

/** One message of the thread, newest first in {@link nextSql}'s answer. */
interface ThreadMessage {
  id: string;
  seq: number;
  sender_id: string;
  content: string;
  reply_to: string | null;
}

/** When a row may be claimed again: in some milliseconds, at a time, or once something wakes it. */
type Due = { inMs: number } | { at: Date } | 'never';

// Claims and reads each claimed row's agent in one statement (one round trip per batch).
const claimSql = `
  WITH picked AS (
    SELECT agent_id, thread_id FROM agent_work
     WHERE latest_seq > handled_seq AND due_at <= now()
     ORDER BY due_at LIMIT $1
     FOR UPDATE SKIP LOCKED
  ), leased AS (
    UPDATE agent_work w SET due_at = now() + make_interval(secs => $2), lease_token = $3, woken = false
      FROM picked p
     WHERE w.agent_id = p.agent_id AND w.thread_id = p.thread_id
    RETURNING w.agent_id, w.thread_id, w.handled_seq, w.latest_seq, w.failures
  )
  SELECT l.*, a.id IS NOT NULL AS found, a.kind, a.name, a.status, a.provider, a.model, a.instructions, a.max_tokens_per_day,
         a.team_id, t.org_id, pk.ciphertext, pk.refused_at IS NOT NULL AS refused,
         COALESCE(d.tokens::float8, 0) AS tokens_today,
         (date_trunc('day', now() AT TIME ZONE 'UTC') + interval '1 day') AT TIME ZONE 'UTC' AS next_day
    FROM leased l
    LEFT JOIN participants a ON a.id = l.agent_id
    LEFT JOIN teams t ON t.id = a.team_id
    LEFT JOIN provider_keys pk ON pk.org_id = t.org_id AND pk.provider = a.provider
    LEFT JOIN agent_daily_usage d ON d.agent_id = a.id AND d.day = (now() AT TIME ZONE 'UTC')::date`;

/**
 * Claims up to `limit` due work rows for `leaseSeconds` under `token`: the rows with work whose
 * `due_at` has come, oldest due first, skipping rows another transaction holds (`FOR UPDATE SKIP
 * LOCKED`); their `due_at` moves to the lease's end, so no other process claims them meanwhile.
 * This one statement is what a tick costs when there is nothing to do: it reads only the partial
 * index of rows with work, however many idle threads there are. Output: the claimed rows, each
 * with its agent as it is now.
 */
export async function claimWork(db: Queryable, limit: number, leaseSeconds: number, token: string): Promise<Claim[]> {
  const rows = await db.query<Omit<Claim, 'token' | 'agent'> & AgentContext & { found: boolean }>(claimSql, [limit, leaseSeconds, token]);
  return rows.map(({ agent_id, thread_id, handled_seq, latest_seq, failures, found, ...agent }) => ({
    agent_id,
    thread_id,
    handled_seq,
    latest_seq,
    failures,
    token,
    agent: found ? agent : null,
  }));
}

// The oldest peer message after the mark that the agent has not answered, and the thread up to
// it, newest first: the conversation as it stood, and the run the ping-pong guard looks at. No
// row: nothing left to answer. Answered are the messages the loop answered (its answer carries
// `reply_to`; a mark that starts at 0 after the migration thus skips them) and every message
// before one the agent wrote by hand (over MCP or REST, `reply_to` null: an external agent that
// gets a provider does not answer its conversations again); both lookups read only the messages
// after the mark. When that hand-written message expects a reply (`expects_reply`: a program such
// as a pipeline step wrote it as the agent and waits for the answer), the first peer message after
// it is that program's answer, not the agent's to answer: it is skipped (`asked`).
const nextSql = `
  WITH spoke AS (
    SELECT COALESCE(max(h.seq), $2) AS seq FROM messages h
     WHERE h.thread_id = $1 AND h.seq > $2 AND h.sender_id = $3 AND h.reply_to IS NULL
  ), asked AS (
    SELECT min(p.seq) AS seq FROM spoke, messages h, messages p
     WHERE h.thread_id = $1 AND h.seq = spoke.seq AND h.sender_id = $3 AND h.expects_reply
       AND p.thread_id = $1 AND p.seq > spoke.seq AND p.sender_id <> $3
  ), next AS (
    SELECT m.seq FROM messages m, spoke, asked
     WHERE m.thread_id = $1 AND m.seq > spoke.seq AND m.sender_id <> $3 AND m.seq IS DISTINCT FROM asked.seq
       AND NOT EXISTS (SELECT 1 FROM messages r WHERE r.sender_id = $3 AND r.reply_to = m.id)
     ORDER BY m.seq LIMIT 1
  )
  SELECT r.id, r.seq, r.sender_id, r.content, r.reply_to
    FROM next, LATERAL (SELECT * FROM messages q WHERE q.thread_id = $1 AND q.seq <= next.seq ORDER BY q.seq DESC LIMIT $4) r
   ORDER BY r.seq DESC`;

// Whether an agent may call its provider now: active, with a key that was not refused.
const readySql = `
  SELECT a.status = 'active' AND pk.ciphertext IS NOT NULL AND pk.refused_at IS NULL AS ready
    FROM participants a JOIN teams t ON t.id = a.team_id
    LEFT JOIN provider_keys pk ON pk.org_id = t.org_id AND pk.provider = a.provider
   WHERE a.id = $1`;

// Gives a claimed row back: moves its mark and sets when it is due again, unless a change that
// wakes the agent's work (agent-work.ts) came while it was claimed (`woken`): what the claim read
// (a paused agent, no key, a spent budget) may be stale then, so the row is due at once. Such a
// change holds the row's lock until it commits, and this UPDATE waits for it and reads the flag.
const parkSql = (due: Due): string => {
  const dueAt = due === 'never' ? `'infinity'::timestamptz` : 'inMs' in due ? `now() + make_interval(secs => $6::float8 / 1000)` : `$6::timestamptz`;
  return `UPDATE agent_work SET handled_seq = GREATEST(handled_seq, $3), due_at = CASE WHEN woken THEN now() ELSE ${dueAt} END,
                 lease_token = NULL, failures = $5, woken = false
           WHERE agent_id = $1 AND thread_id = $2 AND lease_token = $4`;
};

/**
 * Starts the agent loop of contract §8. Every `tickMs` (and at once after each finished reply) it
 * claims due work, up to `concurrency` calls in flight. For each claimed (agent, thread) it answers
 * the oldest peer message after the mark with one provider reply posted as the agent's message
 * (`reply_to` set; one reply per incoming message, in order, also across restarts and processes),
 * records the reply's token usage, and moves the mark. Skipped, without a call: a message that ends
 * a run of `autoReplyLimit` automatic replies (ping-pong guard), and the first answer to a message
 * written as the agent through the API with `expects_reply` (the program that wrote it awaits it). Parked until woken: paused agents,
 * agents whose organization has no key for their provider (logged once per agent) or whose key
 * was refused (a 401/403, logged once per key), providers this process does not run. Parked until the next UTC day: agents
 * whose daily token budget is spent (logged once per day). At start, parked rows of agents whose
 * provider this process runs are looked at again (they may have been parked by a process that did
 * not run it). Failures are logged without the key and
 * retried with exponential backoff; a 429 waits as long as its `Retry-After` says. No error stops
 * the loop. Output: {@link AgentLoop}.
 */
export function startAgentLoop(options: AgentLoopOptions): AgentLoop {
  const { deps, providers, log } = options;
  const autoReplyLimit = options.autoReplyLimit ?? 10;
  const maxBackoffMs = options.maxBackoffMs ?? 300_000;
  const concurrency = Math.max(1, options.concurrency ?? 8);
  const callTimeoutMs = options.callTimeoutMs ?? 120_000;
  const leaseSeconds = (callTimeoutMs + (options.leaseMarginMs ?? 30_000)) / 1000;
  const stopping = new AbortController();
  const onShutdown = () => stopping.abort();
  options.signal?.addEventListener('abort', onShutdown, { once: true });
  // Rate limits are per key: after a 429, no call of that organization's provider before this time.
  const notBefore = new Map<string, number>();
  const inFlight = new Set<Promise<void>>();
  // Agents whose missing provider key was logged (logNoKeyOnce).
  const noKeyLogged = new Set<string>();
  // Organizations and providers whose unreadable key was logged (logUnreadableKeyOnce).
  const unreadableKeyLogged = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  let pumping: Promise<void> | undefined;
  let pumpAgain = false;

  const backoffMs = (failures: number) => Math.min(maxBackoffMs, options.tickMs * 2 ** failures);

  async function park(claim: Claim, due: Due, changes: { handledSeq?: number; failures?: number } = {}): Promise<void> {
    const at = due === 'never' ? null : 'inMs' in due ? Math.max(0, due.inMs) : due.at.toISOString();
    const params: unknown[] = [claim.agent_id, claim.thread_id, changes.handledSeq ?? 0, claim.token, changes.failures ?? claim.failures];
    if (at !== null) params.push(at);
    await deps.db.query(parkSql(due), params);
  }

  /**
   * Records what one paid call cost: a row of `agent_usage` (`messageId`: the reply posted, null
   * when none was) and its tokens on the agent's day, which the budget reads.
   */
  async function recordUsage(tx: Queryable, claim: Claim, agent: AgentContext, paid: Pick<ProviderReply, 'usage' | 'model'>, messageId: string | null): Promise<void> {
    await tx.query(
      `INSERT INTO agent_usage (id, agent_id, team_id, thread_id, message_id, provider, model, input_tokens, output_tokens)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [newId(), claim.agent_id, agent.team_id, claim.thread_id, messageId, agent.provider, paid.model, paid.usage.inputTokens, paid.usage.outputTokens],
    );
    await tx.query(
      `INSERT INTO agent_daily_usage (agent_id, day, tokens) VALUES ($1, (now() AT TIME ZONE 'UTC')::date, $2)
       ON CONFLICT (agent_id, day) DO UPDATE SET tokens = agent_daily_usage.tokens + EXCLUDED.tokens`,
      [claim.agent_id, paid.usage.inputTokens + paid.usage.outputTokens],
    );
  }

  /** Posts the reply, records its usage and moves the mark, in one transaction. Output: whether the reply was posted. */
  async function complete(claim: Claim, agent: AgentContext, incoming: ThreadMessage, reply: ProviderReply): Promise<boolean> {
    const record = async (tx: Queryable, messageId: string | null) => {
      await recordUsage(tx, claim, agent, reply, messageId);
      await tx.query(parkSql({ inMs: 0 }), [claim.agent_id, claim.thread_id, incoming.seq, claim.token, 0, 0]);
    };
    try {
      return await deps.db.transaction(async (tx) => {
        const message = await insertMessage(tx, claim.thread_id, claim.agent_id, reply.text.slice(0, maxContent), { replyTo: incoming.id });
        await record(tx, message.id);
        return true;
      });
    } catch (error) {
      // Another process answered the same message first (a lease that ran out): that answer
      // stands (unique `(sender_id, reply_to)`); this call was paid all the same, so its usage is
      // recorded.
      if (isUniqueViolation(error)) {
        await deps.db.transaction((tx) => record(tx, null));
        return false;
      }
      // The thread was deleted during the call (its edge or team; the work row went with it): the
      // call was paid, so it stays on the team's record (unless the team itself is gone).
      if (error instanceof ServiceError && error.code === 'not_found') {
        await deps.db.transaction((tx) => recordUsage(tx, claim, agent, reply, null)).catch(() => {});
        return false;
      }
      throw error;
    }
  }

  /** Handles one claimed row: at most one provider call, then the row is parked or due again. */
  async function handle(claim: Claim): Promise<void> {
    const { agent } = claim;
    // Gone, or no longer an agent with a provider: nothing to do until it gets one (the PATCH that
    // gives it one makes its threads due again). A PATCH that gave it one while the row was
    // claimed woke it instead: the row stays, due now.
    if (!agent || agent.kind !== 'agent' || agent.provider === null) {
      const deleted = await deps.db.query(`DELETE FROM agent_work WHERE agent_id = $1 AND thread_id = $2 AND lease_token = $3 AND NOT woken RETURNING 1`, [
        claim.agent_id,
        claim.thread_id,
        claim.token,
      ]);
      if (deleted.length === 0) await park(claim, { inMs: 0 });
      return;
    }
    const provider = providers.get(agent.provider);
    if (!provider) return park(claim, 'never');
    if (agent.status !== 'active' || agent.ciphertext === null || agent.refused) {
      // The claim read the agent and its key in its own snapshot, which may predate a PATCH or PUT
      // that committed before the claim could lock the row (agent-work.ts): that change found the
      // row due and did not mark it woken. A fresh look tells; parked for good only if still so.
      const now = await deps.db.query<{ ready: boolean }>(readySql, [claim.agent_id]);
      if (now[0]?.ready) return park(claim, { inMs: 0 });
      if (agent.status === 'active' && agent.ciphertext === null) logNoKeyOnce(claim, agent);
      return park(claim, 'never');
    }
    noKeyLogged.delete(claim.agent_id);
    const gate = `${agent.org_id}:${agent.provider}`;
    const waitMs = (notBefore.get(gate) ?? 0) - Date.now();
    if (waitMs > 0) return park(claim, { inMs: waitMs });

    // The thread as it stood when the message to answer arrived, newest first; enough for the guard too.
    const recent = await deps.db.query<ThreadMessage>(nextSql, [claim.thread_id, claim.handled_seq, claim.agent_id, Math.max(contextMessages, autoReplyLimit)]);
    const incoming = recent[0];
    if (!incoming) return park(claim, { inMs: 0 }, { handledSeq: claim.latest_seq });
    const run = recent.slice(0, autoReplyLimit);
    if (incoming.reply_to !== null && run.length === autoReplyLimit && run.every((m) => m.reply_to !== null)) {
      return park(claim, { inMs: 0 }, { handledSeq: incoming.seq });
    }
    if (agent.max_tokens_per_day !== null && agent.tokens_today >= agent.max_tokens_per_day) {
      await logBudgetOnce(claim.agent_id, agent);
      return park(claim, { at: new Date(agent.next_day) });
    }

    let apiKey: string;
    try {
      apiKey = deps.secrets.open(agent.ciphertext);
    } catch {
      // Sealed with another encryption key. With a lost key nobody can open it until it is set
      // again (which wakes the work); with processes that do not share their key, another one
      // can: backing off leaves the row to it.
      logUnreadableKeyOnce(agent);
      return park(claim, { inMs: backoffMs(claim.failures + 1) }, { failures: claim.failures + 1 });
    }
    unreadableKeyLogged.delete(`${agent.org_id}:${agent.provider}`);
    if (apiKey.trim() === '') return park(claim, 'never');
    const conversation: Turn[] = recent
      .slice(0, contextMessages)
      .reverse()
      .map((m) => ({ role: m.sender_id === claim.agent_id ? 'assistant' : 'user', content: m.content }));
    const timeout = AbortSignal.timeout(callTimeoutMs);
    let reply: ProviderReply;
    try {
      reply = await provider.reply({
        apiKey,
        model: agent.model,
        instructions: agent.instructions,
        conversation,
        answering: incoming.content,
        signal: AbortSignal.any([stopping.signal, timeout]),
      });
    } catch (error) {
      if (stopping.signal.aborted) return park(claim, { inMs: 0 });
      const failure =
        error instanceof ProviderFailure ? error : new ProviderFailure('failed', error instanceof Error ? redactKey(error.message, apiKey) : String(error));
      const reason = timeout.aborted ? `timed out after ${callTimeoutMs} ms` : failure.message;
      // Answered but unusable (an empty reply): paid all the same, so recorded and counted against the budget.
      if (failure.paid) await deps.db.transaction((tx) => recordUsage(tx, claim, agent, failure.paid!, null));
      return onFailure(claim, agent, failure, reason);
    }
    if (await complete(claim, agent, incoming, reply)) deps.events.announce(agent.org_id);
  }

  async function onFailure(claim: Claim, agent: AgentContext, failure: ProviderFailure, reason: string): Promise<void> {
    const where = { agent_id: claim.agent_id, thread_id: claim.thread_id, org_id: agent.org_id, provider: agent.provider, status: failure.status };
    if (failure.kind === 'key_refused') {
      // Only the key that was refused, and only once however many calls were refused with it.
      const marked = await deps.db.query(
        `UPDATE provider_keys SET refused_at = now() WHERE org_id = $1 AND provider = $2 AND ciphertext = $3 AND refused_at IS NULL RETURNING 1`,
        [agent.org_id, agent.provider, agent.ciphertext],
      );
      if (marked.length > 0) {
        log.warn({ ...where, reason }, 'provider refused the organization\'s key: its agents of this provider stop until the key is replaced (PUT /organizations/{org_id}/api-keys/{provider})');
      }
      const current = await deps.db.query<{ refused: boolean }>(`SELECT refused_at IS NOT NULL AS refused FROM provider_keys WHERE org_id = $1 AND provider = $2`, [agent.org_id, agent.provider]);
      // A key replaced during the call is tried at once.
      return park(claim, current[0]?.refused === false ? { inMs: 0 } : 'never');
    }
    const failures = claim.failures + 1;
    if (failure.kind === 'rate_limited') {
      const delay = failure.retryAfterMs ?? backoffMs(failures);
      notBefore.set(`${agent.org_id}:${agent.provider}`, Date.now() + delay);
      log.warn({ ...where, retry_in_ms: delay, reason }, 'provider rate limit: waiting as it asked');
      return park(claim, { inMs: delay }, { failures });
    }
    const delay = backoffMs(failures);
    log.warn({ ...where, failures, retry_in_ms: delay, reason }, 'agent reply failed');
    return park(claim, { inMs: delay }, { failures });
  }

  /**
   * Says once per organization and provider (in this process, until the key opens again) that its
   * stored key cannot be decrypted with this process's encryption key, and what fixes it.
   */
  function logUnreadableKeyOnce(agent: AgentContext): void {
    const gate = `${agent.org_id}:${agent.provider}`;
    if (unreadableKeyLogged.has(gate)) return;
    unreadableKeyLogged.add(gate);
    log.error(
      { org_id: agent.org_id, provider: agent.provider, agent: agent.name },
      `the organization's ${agent.provider} key was encrypted with another encryption key than this process's: processes sharing a database must share ACS_ENCRYPTION_KEY (or one data dir); if the key was lost, set the provider key again (PUT /api/v1/organizations/${agent.org_id}/api-keys/${agent.provider})`,
    );
  }

  /**
   * Says once per agent (in this process, until the agent has a key again) that an agent with a
   * provider waits for its organization's key: without the line, its peer's messages would go
   * unanswered with nothing in the log to tell why.
   */
  function logNoKeyOnce(claim: Claim, agent: AgentContext): void {
    if (noKeyLogged.has(claim.agent_id)) return;
    noKeyLogged.add(claim.agent_id);
    log.warn(
      { agent_id: claim.agent_id, agent: agent.name, team_id: agent.team_id, org_id: agent.org_id, provider: agent.provider },
      `agent ${agent.name} has no ${agent.provider} key in its organization: its messages wait until one is set (PUT /api/v1/organizations/${agent.org_id}/api-keys/${agent.provider}; with teamctl, organization.providerKeys in the definition)`,
    );
  }

  async function logBudgetOnce(agentId: string, agent: AgentContext): Promise<void> {
    const first = await deps.db.query(
      `INSERT INTO agent_daily_usage (agent_id, day, exhausted_logged) VALUES ($1, (now() AT TIME ZONE 'UTC')::date, true)
       ON CONFLICT (agent_id, day) DO UPDATE SET exhausted_logged = true WHERE agent_daily_usage.exhausted_logged = false
       RETURNING 1`,
      [agentId],
    );
    if (first.length > 0) {
      log.warn(
        { agent_id: agentId, max_tokens_per_day: agent.max_tokens_per_day, tokens_today: agent.tokens_today, until: new Date(agent.next_day).toISOString() },
        'agent daily token budget spent: no provider call until the next UTC day',
      );
    }
  }

  function start(claim: Claim): void {
    const task: Promise<void> = handle(claim)
      .catch(async (error: unknown) => {
        log.error({ agent_id: claim.agent_id, thread_id: claim.thread_id, reason: (error as Error).message }, 'agent loop: handling a thread failed');
        // Give the row back with backoff rather than holding it until the lease ends.
        await park(claim, { inMs: backoffMs(claim.failures + 1) }, { failures: claim.failures + 1 }).catch(() => {});
      })
      .finally(() => {
        inFlight.delete(task);
        if (!stopping.signal.aborted) void pump();
      });
    inFlight.add(task);
  }

  /** Claims due rows for the free slots; coalesces concurrent requests to claim into one at a time. */
  function pump(): Promise<void> {
    if (pumping) {
      pumpAgain = true;
      return pumping;
    }
    pumping = (async () => {
      do {
        pumpAgain = false;
        const free = concurrency - inFlight.size;
        if (free <= 0 || stopping.signal.aborted) break;
        for (const claim of await claimWork(deps.db, free, leaseSeconds, randomUUID())) start(claim);
      } while (pumpAgain && !stopping.signal.aborted);
    })()
      .catch((error: unknown) => log.error({ reason: (error as Error).message }, 'agent loop: claiming work failed'))
      .finally(() => {
        pumping = undefined;
      });
    return pumping;
  }

  function schedule(): void {
    if (stopping.signal.aborted) return;
    timer = setTimeout(() => {
      void pump().finally(schedule);
    }, options.tickMs);
  }
  // Rows parked until something wakes them stay parked across restarts. Those of agents whose
  // provider this process runs are looked at once more before the first tick: the process that
  // parked them may not have run that provider (ACS_AGENT_PROVIDERS has changed since), and no
  // PATCH or PUT may ever come to wake them. Rows parked for another reason are parked again.
  const starting = deps.db
    .query(
      `UPDATE agent_work w SET due_at = now() FROM participants p
        WHERE w.due_at = 'infinity' AND w.latest_seq > w.handled_seq AND w.lease_token IS NULL
          AND p.id = w.agent_id AND p.provider = ANY($1::text[])`,
      [[...providers.keys()]],
    )
    .catch((error: unknown) => log.error({ reason: (error as Error).message }, 'agent loop: waking parked work at start failed'))
    .then(schedule);

  return {
    async stop() {
      stopping.abort();
      options.signal?.removeEventListener('abort', onShutdown);
      await starting;
      clearTimeout(timer);
      await pumping;
      await Promise.all([...inFlight]);
    },
  };
}
