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
import { trace, type Tracer } from '@opentelemetry/api';
import { ServiceError } from '../../errors/catalogue.ts';
import type { DomainDeps } from '../domain/caller.ts';
import { completeTaskWithReply, startTaskWork, taskAssignedOnThread } from '../domain/task-turns.ts';
import { insertMessage } from '../domain/threads.ts';
import type { Queryable } from '../storage/db.ts';
import { isUniqueViolation } from '../storage/db.ts';
import { redactKey } from './providers/redact-key.ts';
import { ProviderFailure, type ProviderReply, type ReplyProvider, type Turn } from './providers/types.ts';
import { createTurnRunner } from './turns/run-turn.ts';
import { createRemoteA2aRunner } from '../a2a/remote-runner.ts';
import type { FileLimits } from '../a2a/remote-files.ts';
import { newId } from '../domain/ids.ts';
import { createDeltaWriter, resumeDeltas } from '../events/deltas.ts';
import { stoppedText } from './turns/transcript.ts';
import { TurnOutcomes } from '../metrics/hooks.ts';
import { watchTurn, type TurnWatch } from '../metrics/turn-watch.ts';
import {
  claimWork,
  contextMessages,
  endsAutoReplyRun,
  maxContent,
  nextSql,
  parkRow,
  parkSql,
  readySql,
  recordUsage,
  fixReplyId,
  releaseDeadLeases,
  watchStop,
  type AgentContext,
  type Claim,
  type Due,
  type LoopLogger,
  type ThreadMessage,
} from './work.ts';

export type { LoopLogger } from './work.ts';

/** Options of {@link startAgentLoop}. */
export interface AgentLoopOptions {
  deps: DomainDeps;
  /** Time between two looks for due work when there is none, in milliseconds. */
  tickMs: number;
  providers: ReadonlyMap<string, ReplyProvider>;
  log: LoopLogger;
  /**
   * Ping-pong guard: a thread whose last `autoReplyLimit` messages were all automatic replies
   * (two agents on one edge answering each other: provider agents, remote A2A agents, or one of
   * each; what counts as automatic: work.ts `automaticSql`) gets no further automatic reply, and
   * nothing more is sent to a remote A2A agent, until someone writes a message by hand. Default 10.
   */
  autoReplyLimit?: number;
  /** Upper bound of the retry delay after provider failures, in milliseconds. Default 300000. */
  maxBackoffMs?: number;
  /** Provider calls in flight at once in this process. Default 8. */
  concurrency?: number;
  /** Longest provider call, in milliseconds; it is aborted then and retried with backoff. Default 120000. */
  callTimeoutMs?: number;
  /** Bounds on remote A2A agents' files (a2a/remote-files.ts `FileLimits`); default `defaultFileLimits`. */
  remoteFileLimits?: FileLimits | undefined;
  /**
   * How much longer than a call's timeout a claim lasts, in milliseconds (default 30000): a row
   * whose process died is taken over after `callTimeoutMs + leaseMarginMs`.
   */
  leaseMarginMs?: number;
  /** Aborts calls in flight (the service shutting down); `stop()` does too. */
  signal?: AbortSignal;
  /** Where turns' spans go (`invoke_agent`, `execute_tool`); default the global tracer provider's. */
  tracer?: Tracer;
}

/** The running loop. */
export interface AgentLoop {
  /** Stops claiming, aborts calls in flight, gives their rows back, and resolves once all ended. */
  stop(): Promise<void>;
}

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
  const leaseMarginMs = options.leaseMarginMs ?? 30_000;
  const leaseSeconds = (callTimeoutMs + leaseMarginMs) / 1000;
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
  // When the leases of stopped processes were last looked for (0: at the first tick).
  let lastSweep = 0;
  const sweepEveryMs = 5_000;
  // With metrics: what each claimed row's work came to (service/metrics/turn-watch.ts), counted when it ends.
  const watches = new WeakMap<Claim, TurnWatch>();

  const backoffMs = (failures: number) => Math.min(maxBackoffMs, options.tickMs * 2 ** failures);
  const turns = createTurnRunner({
    deps,
    log,
    callTimeoutMs,
    leaseMarginMs,
    autoReplyLimit,
    stopping: stopping.signal,
    tracer: options.tracer ?? trace.getTracer('acs-server'),
    onProviderFailure: (claim, agent, failure, reason) => onFailure(claim, agent, failure, reason),
    onBudgetSpent: (claim, agent) => budgetSpent(claim, agent),
  });

  // Remote A2A agents' exchanges (contract §12): their work rows are claimed here like provider agents'.
  const remotes = createRemoteA2aRunner({ deps, log, callTimeoutMs, backoffMs, autoReplyLimit, stopping: stopping.signal, fileLimits: options.remoteFileLimits });

  const park = (claim: Claim, due: Due, changes: { handledSeq?: number; failures?: number } = {}) => parkRow(deps.db, claim, due, changes);

  /**
   * Posts the reply under its fixed id (`stopped`: the text written before a stop, §13), records
   * its usage and moves the mark, in one transaction; with `onTask` (the thread's task is assigned to
   * the agent, §12), a reply that was not stopped completes the task with the reply as an artifact
   * in that transaction too. Output: whether the reply was posted.
   */
  async function complete(claim: Claim, agent: AgentContext, incoming: ThreadMessage, reply: ProviderReply, replyId: string, stopped: boolean, onTask = false): Promise<boolean> {
    const record = async (tx: Queryable, messageId: string | null) => {
      // A stopped call reported no usage (its stream was cut): nothing is recorded for it.
      if (!stopped) await recordUsage(tx, claim, agent, reply, messageId);
      await tx.query(parkSql({ inMs: 0 }), [claim.agent_id, claim.thread_id, incoming.seq, claim.token, 0, 0]);
    };
    try {
      return await deps.db.transaction(async (tx) => {
        const text = stopped ? stoppedText(reply.text) : reply.text;
        const message = await insertMessage(tx, claim.thread_id, claim.agent_id, text.slice(0, maxContent), { replyTo: incoming.id, id: replyId, stopped });
        if (onTask && !stopped) await completeTaskWithReply(tx, { threadId: claim.thread_id, agentId: claim.agent_id, messageId: message.id, text: message.content });
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

  /** The daily budget is spent: said once a day, and the row waits for the next UTC day. */
  async function budgetSpent(claim: Claim, agent: AgentContext): Promise<void> {
    await logBudgetOnce(claim.agent_id, agent);
    return park(claim, { at: new Date(agent.next_day) });
  }

  /**
   * The organization's provider key, opened for a call; undefined (and the row parked) when it
   * cannot be used: sealed with another encryption key (backed off: with processes that do not
   * share their key, another one can open it; with a lost key, setting it again wakes the work),
   * or empty (parked until a change wakes it).
   */
  async function openKey(claim: Claim, agent: AgentContext): Promise<string | undefined> {
    let apiKey: string;
    try {
      apiKey = deps.secrets.open(agent.ciphertext!);
    } catch {
      logUnreadableKeyOnce(agent);
      await park(claim, { inMs: backoffMs(claim.failures + 1) }, { failures: claim.failures + 1 });
      return undefined;
    }
    unreadableKeyLogged.delete(`${agent.org_id}:${agent.provider}`);
    if (apiKey.trim() === '') {
      await park(claim, 'never');
      return undefined;
    }
    return apiKey;
  }

  /** Handles one claimed row: at most one provider call (a turn: its steps), then the row is parked or due again. */
  async function handle(claim: Claim): Promise<void> {
    const { agent } = claim;
    // A remote A2A agent: the message goes to it and its answers come back (service/a2a/remote-runner.ts).
    if (agent && agent.kind === 'agent' && agent.provider === null && agent.a2a !== null) return remotes.run(claim, agent);
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

    // An agent with tools answers with a turn of steps (contract §11, turns/run-turn.ts).
    if (agent.tools !== null) {
      if (agent.max_tokens_per_day !== null && agent.tokens_today >= agent.max_tokens_per_day) return budgetSpent(claim, agent);
      const key = await openKey(claim, agent);
      if (key === undefined) return;
      const watch = watches.get(claim);
      await turns.run(claim, agent, watch?.meter(provider, agent.provider) ?? provider, key);
      return watch?.afterToolTurn(deps.db, claim.agent_id, claim.thread_id);
    }

    // The thread as it stood when the message to answer arrived, newest first; enough for the guard too.
    const recent = await deps.db.query<ThreadMessage>(nextSql, [claim.thread_id, claim.handled_seq, claim.agent_id, Math.max(contextMessages, autoReplyLimit)]);
    const incoming = recent[0];
    if (!incoming) return park(claim, { inMs: 0 }, { handledSeq: claim.latest_seq });
    // The thread's task, when assigned to the agent (§12). Canceled: the requester withdrew what it
    // asked, so the thread gets no reply from the agent (read after the claim: a cancel committed
    // after this read finds the row leased and stops the call, domain/tasks.ts).
    const task = await taskAssignedOnThread(deps.db, claim.thread_id, claim.agent_id);
    if (task?.state === 'canceled') return park(claim, { inMs: 0 }, { handledSeq: claim.latest_seq });
    if (endsAutoReplyRun(recent, autoReplyLimit)) return park(claim, { inMs: 0 }, { handledSeq: incoming.seq });
    if (agent.max_tokens_per_day !== null && agent.tokens_today >= agent.max_tokens_per_day) return budgetSpent(claim, agent);

    const apiKey = await openKey(claim, agent);
    if (apiKey === undefined) return;
    // The thread's task, when assigned to the agent, is worked on from now (§12): its reply completes it.
    const onTask = task !== undefined;
    if (onTask) await startTaskWork(deps, claim.thread_id, claim.agent_id);
    const conversation: Turn[] = recent
      .slice(0, contextMessages)
      .reverse()
      .map((m) => ({ role: m.sender_id === claim.agent_id ? 'assistant' : 'user', content: m.content }));
    const timeout = AbortSignal.timeout(callTimeoutMs);
    // Watched from before the reply's id is fixed (the statement that also reads whether a stop was
    // asked already), so no stop falls between the two.
    const stop = watchStop(
      deps.events,
      claim.thread_id,
      async () => {
        const rows = await deps.db.query<{ stop_requested: boolean }>(`SELECT stop_requested FROM agent_work WHERE agent_id = $1 AND thread_id = $2 AND lease_token = $3`, [
          claim.agent_id,
          claim.thread_id,
          claim.token,
        ]);
        return rows[0]?.stop_requested === true;
      },
      { lookNow: false },
    );
    let reply: ProviderReply;
    try {
      // The reply's id is fixed before the call (§13: its deltas name it); a retry keeps it, and its
      // stream says it restarted when the attempt before had written some of it.
      const { replyId, earlier, stopRequested } = await fixReplyId(deps.db, claim, newId());
      if (stopRequested) stop.abort();
      const startIndex = earlier ? await resumeDeltas(deps.db, deps.events, claim.thread_id, replyId, claim.agent_id) : 0;
      const writer = createDeltaWriter(
        { db: deps.db, hub: deps.events, threadId: claim.thread_id, messageId: replyId, senderId: claim.agent_id },
        { startIndex, maxChars: maxContent, onError: (error) => log.warn({ agent_id: claim.agent_id, thread_id: claim.thread_id, reason: (error as Error).message }, 'agent loop: a delta of a reply could not be written') },
      );
      try {
        reply = await (watches.get(claim)?.meter(provider, agent.provider) ?? provider).reply({
          apiKey,
          model: agent.model,
          instructions: agent.instructions,
          conversation,
          answering: incoming.content,
          signal: AbortSignal.any([stopping.signal, timeout, stop.signal]),
          onText: (text) => writer.push(text),
        });
      } catch (error) {
        await writer.flush();
        if (stopping.signal.aborted) return park(claim, { inMs: 0 });
        if (stop.signal.aborted) {
          // Stopped by a person or a program (§13): what was written so far is the reply.
          const posted = await complete(claim, agent, incoming, { text: writer.text(), usage: { inputTokens: 0, outputTokens: 0 }, model: agent.model ?? agent.provider ?? '' }, replyId, true);
          watches.get(claim)?.outcome(posted ? TurnOutcomes.replied : TurnOutcomes.discarded);
          if (posted) deps.events.announce(agent.org_id);
          return;
        }
        const failure =
          error instanceof ProviderFailure ? error : new ProviderFailure('failed', error instanceof Error ? redactKey(error.message, apiKey) : String(error));
        const reason = timeout.aborted ? `timed out after ${callTimeoutMs} ms` : failure.message;
        // Answered but unusable (an empty reply): paid all the same, so recorded and counted against the budget.
        if (failure.paid) await deps.db.transaction((tx) => recordUsage(tx, claim, agent, failure.paid!, null));
        return onFailure(claim, agent, failure, reason);
      }
      await writer.flush();
      const posted = await complete(claim, agent, incoming, reply, replyId, false, onTask);
      watches.get(claim)?.outcome(posted ? TurnOutcomes.replied : TurnOutcomes.discarded);
      if (posted) deps.events.announce(agent.org_id);
    } finally {
      stop.dispose();
    }
  }

  async function onFailure(claim: Claim, agent: AgentContext, failure: ProviderFailure, reason: string): Promise<void> {
    watches.get(claim)?.outcome(failure.kind);
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
    if (deps.metrics) watches.set(claim, watchTurn(deps.metrics));
    const task: Promise<void> = handle(claim)
      .catch(async (error: unknown) => {
        log.error({ agent_id: claim.agent_id, thread_id: claim.thread_id, reason: (error as Error).message }, 'agent loop: handling a thread failed');
        // Give the row back with backoff rather than holding it until the lease ends.
        await park(claim, { inMs: backoffMs(claim.failures + 1) }, { failures: claim.failures + 1 }).catch(() => {});
      })
      .finally(() => {
        watches.get(claim)?.end();
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
      // Rows leased by processes that are gone are given up first (work.ts), at most every few seconds.
      if (Date.now() - lastSweep >= sweepEveryMs) {
        lastSweep = Date.now();
        const released = await releaseDeadLeases(deps.db);
        if (released > 0) log.info({ rows: released }, 'agent loop: took over work leased by a process that stopped');
      }
      do {
        pumpAgain = false;
        const free = concurrency - inFlight.size;
        if (free <= 0 || stopping.signal.aborted) break;
        for (const claim of await claimWork(deps.db, free, leaseSeconds, randomUUID(), deps.instanceId ?? null)) start(claim);
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
