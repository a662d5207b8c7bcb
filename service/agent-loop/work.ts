/**
 * The agent loop's work rows in storage (`agent_work`, migrations 0009, 0010, 0022): claiming due
 * rows under a lease, finding the next message to answer, parking a row, extending and releasing
 * leases, and recording what a provider call cost. Shared by the loop (agent-loop.ts) and turns
 * (turns/), which park their rows in the transaction that posts a reply.
 */
import type { Queryable } from '../storage/db.ts';
import { instanceAlive } from '../storage/server-instance.ts';
import { newId } from '../domain/ids.ts';
import { stopKey } from '../events/deltas.ts';
import type { EventHub } from '../events/hub.ts';
import type { TokenUsage } from './providers/types.ts';

/** Where the loop reports; a pino logger fits. */
export interface LoopLogger {
  info(object: Record<string, unknown>, message: string): void;
  warn(object: Record<string, unknown>, message: string): void;
  error(object: Record<string, unknown>, message: string): void;
}

/** The contract's longest message (§1): a longer reply is cut there. */
export const maxContent = 32_768;
/** The conversation handed to a provider: the most recent messages only, to bound prompt size. */
export const contextMessages = 50;

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
  /** Most model calls of one turn (contract §11). */
  max_steps: number;
  /** What the agent may call (contract §11, stored JSON); null: it answers with one completion (§8). */
  tools: unknown;
  /** Its servers' sealed header values. */
  tool_secrets: string | null;
  /** Set for a remote A2A agent (contract §12, stored JSON: url and header fingerprints); null otherwise. */
  a2a: unknown;
  /** A remote A2A agent's sealed header values. */
  a2a_secrets: string | null;
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
export interface ThreadMessage {
  id: string;
  seq: number;
  sender_id: string;
  content: string;
  reply_to: string | null;
  /** Whether it is an automatic reply, for the ping-pong guard (see {@link automaticSql}). */
  automatic: boolean;
}

/**
 * Whether the message `m` (an alias of `messages`) is an automatic reply, as the ping-pong guard
 * counts them (contract §11; agent-loop.ts `autoReplyLimit`): an answer of the agent loop (a
 * provider agent's reply, `reply_to` set), or anything a remote A2A agent's exchange recorded in
 * the thread (its status messages, questions and answers, named in `a2a_posted`: migration 0028).
 * A message written by hand (REST, MCP, the console, a pipeline step, a turn's tools) is not,
 * even in a remote agent's name. Read through `a2a_posted`'s key (the sender's rows on the
 * thread), and only for a message without `reply_to`.
 */
export const automaticSql = (m: string): string =>
  `(CASE WHEN ${m}.reply_to IS NOT NULL THEN true
         ELSE EXISTS (SELECT 1 FROM a2a_posted ap WHERE ap.agent_id = ${m}.sender_id AND ap.thread_id = ${m}.thread_id AND ap.message_id = ${m}.id) END)`;

/**
 * The ping-pong guard's test: whether the message to answer ends a run of `limit` automatic
 * replies (two agents answering each other: provider agents, remote A2A agents, or one of each),
 * so it gets no automatic answer. `recent`: the thread up to that message, newest first (the
 * message first), each with {@link ThreadMessage.automatic}.
 */
export function endsAutoReplyRun(recent: readonly Pick<ThreadMessage, 'automatic'>[], limit: number): boolean {
  const run = recent.slice(0, limit);
  return recent[0]?.automatic === true && run.length === limit && run.every((m) => m.automatic);
}

/**
 * The thread `threadId` up to the message at `seq`, newest first, at most `limit` messages: what
 * {@link endsAutoReplyRun} reads for an agent that does not use {@link nextSql} (a remote A2A
 * agent's exchange, service/a2a/remote-runner.ts).
 */
export async function recentMessages(db: Queryable, threadId: string, seq: number, limit: number): Promise<Array<Pick<ThreadMessage, 'id' | 'seq' | 'automatic'>>> {
  return db.query(`SELECT m.id, m.seq, ${automaticSql('m')} AS automatic FROM messages m WHERE m.thread_id = $1 AND m.seq <= $2 ORDER BY m.seq DESC LIMIT $3`, [threadId, seq, limit]);
}

/** When a row may be claimed again: in some milliseconds, at a time, or once something wakes it. */
export type Due = { inMs: number } | { at: Date } | 'never';

// Claims and reads each claimed row's agent in one statement (one round trip per batch).
const claimSql = `
  WITH picked AS (
    SELECT agent_id, thread_id FROM agent_work
     WHERE latest_seq > handled_seq AND due_at <= now()
     ORDER BY due_at LIMIT $1
     FOR UPDATE SKIP LOCKED
  ), leased AS (
    UPDATE agent_work w SET due_at = now() + make_interval(secs => $2), lease_token = $3, woken = false, claimed_by = $4
      FROM picked p
     WHERE w.agent_id = p.agent_id AND w.thread_id = p.thread_id
    RETURNING w.agent_id, w.thread_id, w.handled_seq, w.latest_seq, w.failures
  )
  SELECT l.*, a.id IS NOT NULL AS found, a.kind, a.name, a.status, a.provider, a.model, a.instructions, a.max_tokens_per_day,
         a.max_steps, a.tools, a.tool_secrets, a.a2a, a.a2a_secrets,
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
 * index of rows with work, however many idle threads there are. `instanceId` (this process's, as
 * registered: storage/server-instance.ts) is recorded with the lease, so the rows of a process that
 * dies are given up as soon as its heartbeat is stale ({@link releaseDeadLeases}). Output: the
 * claimed rows, each with its agent as it is now.
 */
export async function claimWork(db: Queryable, limit: number, leaseSeconds: number, token: string, instanceId: string | null = null): Promise<Claim[]> {
  const rows = await db.query<Omit<Claim, 'token' | 'agent'> & AgentContext & { found: boolean }>(claimSql, [limit, leaseSeconds, token, instanceId]);
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
// gets a provider does not answer its conversations again) after its last automatic answer — what
// a turn's tools wrote into the thread before the turn's answer (contract §11: a note sent with
// send_message, a question asked there) answers nothing. Both lookups read only the messages after
// the mark. When that hand-written message expects a reply (`expects_reply`: a program such as a
// pipeline step wrote it as the agent and waits for the answer), the first peer message after it
// is that program's answer, not the agent's to answer: it is skipped (`asked`). So is any peer
// message that answers a message of the agent expecting one — the first of its sender after it
// (`answers_message_id`), or a reply to it (`reply_to`: an agent's turn answers after its notes) —
// which the program or the agent's own turn that asked takes.
export const nextSql = `
  WITH replied AS (
    SELECT COALESCE(max(a.seq), $2) AS seq FROM messages a
     WHERE a.thread_id = $1 AND a.seq > $2 AND a.sender_id = $3 AND a.reply_to IS NOT NULL
  ), spoke AS (
    SELECT COALESCE(max(h.seq), $2) AS seq FROM messages h, replied
     WHERE h.thread_id = $1 AND h.seq > replied.seq AND h.sender_id = $3 AND h.reply_to IS NULL
  ), asked AS (
    SELECT min(p.seq) AS seq FROM spoke, messages h, messages p
     WHERE h.thread_id = $1 AND h.seq = spoke.seq AND h.sender_id = $3 AND h.expects_reply
       AND p.thread_id = $1 AND p.seq > spoke.seq AND p.sender_id <> $3
  ), next AS (
    SELECT m.seq FROM messages m, spoke, asked
     WHERE m.thread_id = $1 AND m.seq > spoke.seq AND m.sender_id <> $3 AND m.seq IS DISTINCT FROM asked.seq
       AND NOT EXISTS (SELECT 1 FROM messages r WHERE r.sender_id = $3 AND r.reply_to = m.id)
       AND NOT EXISTS (SELECT 1 FROM messages q WHERE q.id IN (m.answers_message_id, m.reply_to) AND q.sender_id = $3 AND q.expects_reply)
     ORDER BY m.seq LIMIT 1
  )
  SELECT r.id, r.seq, r.sender_id, r.content, r.reply_to, ${automaticSql('r')} AS automatic
    FROM next, LATERAL (SELECT * FROM messages q WHERE q.thread_id = $1 AND q.seq <= next.seq ORDER BY q.seq DESC LIMIT $4) r
   ORDER BY r.seq DESC`;

// Whether an agent may call its provider now: active, with a key that was not refused.
export const readySql = `
  SELECT a.status = 'active' AND pk.ciphertext IS NOT NULL AND pk.refused_at IS NULL AS ready
    FROM participants a JOIN teams t ON t.id = a.team_id
    LEFT JOIN provider_keys pk ON pk.org_id = t.org_id AND pk.provider = a.provider
   WHERE a.id = $1`;

// Gives a claimed row back: moves its mark and sets when it is due again (a reply's fixed id goes
// once the mark passes its message; a stop asked of the attempt goes with the attempt), unless a change that
// wakes the agent's work (agent-work.ts) came while it was claimed (`woken`): what the claim read
// (a paused agent, no key, a spent budget) may be stale then, so the row is due at once. Such a
// change holds the row's lock until it commits, and this UPDATE waits for it and reads the flag.
export const parkSql = (due: Due): string => {
  const dueAt = due === 'never' ? `'infinity'::timestamptz` : 'inMs' in due ? `now() + make_interval(secs => $6::float8 / 1000)` : `$6::timestamptz`;
  return `UPDATE agent_work SET handled_seq = GREATEST(handled_seq, $3), due_at = CASE WHEN woken THEN now() ELSE ${dueAt} END,
                 lease_token = NULL, claimed_by = NULL, failures = $5, woken = false, stop_requested = false,
                 reply_id = CASE WHEN $3 > handled_seq THEN NULL ELSE reply_id END
           WHERE agent_id = $1 AND thread_id = $2 AND lease_token = $4`;
};


/**
 * Parks a claimed row: moves its mark to `handledSeq` (never back), resets or sets its failures,
 * and makes it due as `due` says (at once when something woke it meanwhile). Only while `claim`
 * still holds it (its lease token). Output: none.
 */
export async function parkRow(
  db: Queryable,
  claim: Pick<Claim, 'agent_id' | 'thread_id' | 'token' | 'failures'>,
  due: Due,
  changes: { handledSeq?: number | undefined; failures?: number | undefined } = {},
): Promise<void> {
  const at = due === 'never' ? null : 'inMs' in due ? Math.max(0, due.inMs) : due.at.toISOString();
  const params: unknown[] = [claim.agent_id, claim.thread_id, changes.handledSeq ?? 0, claim.token, changes.failures ?? claim.failures];
  if (at !== null) params.push(at);
  await db.query(parkSql(due), params);
}

/**
 * Extends a claim's lease to `seconds` from now, before work that may outlast it (a step with
 * tools that may each take up to their timeout). Output: whether the claim still held the row; a
 * false means another process took it over (this one was too slow, or thought dead), and the
 * caller must stop working on it.
 */
export async function extendLease(db: Queryable, claim: Pick<Claim, 'agent_id' | 'thread_id' | 'token'>, seconds: number): Promise<boolean> {
  const rows = await db.query(
    `UPDATE agent_work SET due_at = now() + make_interval(secs => $4) WHERE agent_id = $1 AND thread_id = $2 AND lease_token = $3 RETURNING 1`,
    [claim.agent_id, claim.thread_id, claim.token, seconds],
  );
  return rows.length > 0;
}

/**
 * Gives up the leases of processes that are gone (their heartbeat is stale, or their instance row
 * was removed: the embedded database's sole process removes every earlier one at start): their
 * rows become due now, so a turn or reply a killed process was working on is taken over within
 * seconds rather than when its lease runs out. Reads only the leased rows (a partial index).
 * Output: how many rows were given up.
 */
export async function releaseDeadLeases(db: Queryable): Promise<number> {
  const rows = await db.query(
    `UPDATE agent_work w SET due_at = now(), lease_token = NULL, claimed_by = NULL
      WHERE w.lease_token IS NOT NULL AND w.claimed_by IS NOT NULL AND NOT ${instanceAlive('w.claimed_by')}
      RETURNING 1`,
  );
  return rows.length;
}

/**
 * Records what one paid call cost: a row of `agent_usage` (`messageId`: the reply posted, null
 * when none was) and its tokens on the agent's day, which the budget reads.
 */
export async function recordUsage(
  tx: Queryable,
  row: { agent_id: string; thread_id: string },
  agent: Pick<AgentContext, 'team_id' | 'provider'>,
  paid: { usage: TokenUsage; model: string },
  messageId: string | null,
): Promise<void> {
  // One statement for both rows: a turn records a step's usage in each of its transactions.
  await tx.query(
    `WITH used AS (
       INSERT INTO agent_usage (id, agent_id, team_id, thread_id, message_id, provider, model, input_tokens, output_tokens)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING 1
     )
     INSERT INTO agent_daily_usage (agent_id, day, tokens) SELECT $2, (now() AT TIME ZONE 'UTC')::date, $10::bigint FROM used
     ON CONFLICT (agent_id, day) DO UPDATE SET tokens = agent_daily_usage.tokens + EXCLUDED.tokens`,
    [newId(), row.agent_id, agent.team_id, row.thread_id, messageId, agent.provider, paid.model, paid.usage.inputTokens, paid.usage.outputTokens, paid.usage.inputTokens + paid.usage.outputTokens],
  );
}

/** Tokens an agent spent in the current UTC day, read now (a claim's figure is stale after a step). */
export async function tokensToday(db: Queryable, agentId: string): Promise<number> {
  const rows = await db.query<{ tokens: number }>(`SELECT COALESCE(tokens::float8, 0) AS tokens FROM agent_daily_usage WHERE agent_id = $1 AND day = (now() AT TIME ZONE 'UTC')::date`, [agentId]);
  return rows[0]?.tokens ?? 0;
}

/**
 * Fixes the id of the reply a claimed row is about to write (§13: deltas name it before it is
 * posted): the id an earlier attempt at the same message fixed, else `fresh`. Output: the id,
 * whether it was an earlier attempt's (its deltas may need a restart: events/deltas.ts
 * `resumeDeltas`), and whether a stop was asked of the row already. Errors: the storage's.
 */
export async function fixReplyId(
  db: Queryable,
  claim: Pick<Claim, 'agent_id' | 'thread_id' | 'token'>,
  fresh: string,
): Promise<{ replyId: string; earlier: boolean; stopRequested: boolean }> {
  const rows = await db.query<{ reply_id: string; stop_requested: boolean }>(
    `UPDATE agent_work SET reply_id = COALESCE(reply_id, $4) WHERE agent_id = $1 AND thread_id = $2 AND lease_token = $3 RETURNING reply_id, stop_requested`,
    [claim.agent_id, claim.thread_id, claim.token, fresh],
  );
  const replyId = rows[0]?.reply_id ?? fresh;
  return { replyId, earlier: replyId !== fresh, stopRequested: rows[0]?.stop_requested === true };
}

/** How often a watch reads the flag of a stop by itself, in milliseconds (besides every signal). */
const stopPollMs = 2_000;

/** A stop being watched for: aborted once a stop was asked of the work (§13); `dispose` ends the watch. */
export interface StopWatch {
  signal: AbortSignal;
  /** Aborts the watch: the caller found the stop asked itself. */
  abort(): void;
  dispose(): void;
}

/**
 * Watches for a stop asked of the work on `threadId` (domain/replies.ts): on each signal of the
 * thread's stop key, from any process, and every 2 s besides, `requested` is read (is the stop for
 * this work?), and the watch aborts when it says so; it is read once at the start too, for a stop asked before the watch
 * began, unless `lookNow` is false (the caller reads it itself after the watch began, and aborts the
 * watch when it was asked). Output: the {@link StopWatch}.
 */
export function watchStop(hub: EventHub, threadId: string, requested: () => Promise<boolean>, options: { lookNow?: boolean } = {}): StopWatch {
  const controller = new AbortController();
  const look = () =>
    void requested().then(
      (yes) => {
        if (yes) controller.abort(new Error('stopped'));
      },
      () => {},
    );
  const off = hub.onSignal(stopKey(threadId), look);
  if (options.lookNow !== false) look();
  // A stop asked through another process in the moment before it learnt that this one follows the
  // key sends no notification: a look every few seconds finds its flag all the same.
  const poll = setInterval(look, stopPollMs);
  poll.unref();
  return {
    signal: controller.signal,
    abort: () => controller.abort(new Error('stopped')),
    dispose() {
      clearInterval(poll);
      off();
    },
  };
}
