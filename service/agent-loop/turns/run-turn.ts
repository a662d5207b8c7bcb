/**
 * A turn of a provider agent with tools (contract §11): model → tool calls → model … until the
 * model writes text (the reply, posted as §8's) or `max_steps` is reached. One claimed work row
 * (agent, thread) runs its turn as far as it can go: every step and every tool call is stored as
 * it finishes (turn-store.ts), so whichever process claims the row next resumes exactly there.
 *
 * - A call is recorded before it runs, moved to `running` before it starts and to a final state
 *   when it ends, each in one conditional transaction: a call that was `running` when its process
 *   died is found so by the next one and becomes `failed` (`interrupted`), and the model is told —
 *   a tool with side effects runs at most once.
 * - `ask` and approvals write their question and wait: the turn suspends, its row parked until
 *   the answer's message wakes it (migration 0022's trigger) or the wait's deadline, holding no
 *   provider call, no loop slot and no request meanwhile.
 * - Edges are the permission: the team tools and `ask` reach only the agent's edges (the domain
 *   checks every call); a refusal is a recorded tool error `not_on_your_edges`.
 */
import { SpanStatusCode, type Span, type Tracer } from '@opentelemetry/api';
import { maxToolCallsPerStep, type AgentTools } from '../../../api/agent-tools.ts';
import { ServiceError } from '../../../errors/catalogue.ts';
import type { AgentIdentity } from '../../domain/agent-inbox.ts';
import { openToolSecrets, toolsResource, type ToolSecrets } from '../../domain/agent-tools.ts';
import type { DomainDeps } from '../../domain/caller.ts';
import { askBackThread, completeTaskWithReply, markTaskInputRequired, startTaskWork, taskAssignedOnThread } from '../../domain/task-turns.ts';
import { insertMessage } from '../../domain/threads.ts';
import { isUniqueViolation, type Queryable } from '../../storage/db.ts';
import { approvalQuestion, approvalReask, findApprover, maxApprovalAttempts, parseApproval } from '../../tools/approval.ts';
import { answerReplyTo, findAnswer, judgeAnswer, questionText, resolveAskTarget, writeQuestion, type AskArgs } from '../../tools/ask.ts';
import { boundedResult, RemoteToolError } from '../../tools/remote-mcp.ts';
import { openToolbox, type Toolbox, type TurnTool } from '../../tools/toolbox.ts';
import { redactKey } from '../providers/redact-key.ts';
import { ProviderFailure, type ReplyProvider, type StepReply } from '../providers/types.ts';
import { contextMessages, endsAutoReplyRun, extendLease, maxContent, nextSql, parkRow, recordUsage, tokensToday, type AgentContext, type Claim, type LoopLogger, type ThreadMessage, watchStop } from '../work.ts';
import { stepMessages, stoppedText, type ContextMessage } from './transcript.ts';
import { createDeltaWriter, resumeDeltas, signalLive } from '../../events/deltas.ts';
import { moveCall, type ToolCallRow } from '../../domain/tool-calls.ts';
import { newId } from '../../domain/ids.ts';
import {
  callsOfStep,
  callsOfTurn,
  finishTurn,
  fixTurnReplyId,
  openTurnOf,
  recordStep,
  setTurnState,
  startTurn,
  turnStopRequested,
  type NewToolCall,
  type TurnRow,
} from './turn-store.ts';

/** What the turn runner needs of the loop. */
export interface TurnRunnerOptions {
  deps: DomainDeps;
  log: LoopLogger;
  /** Longest provider call, in milliseconds. */
  callTimeoutMs: number;
  /** How much longer than the work it covers a lease lasts, in milliseconds. */
  leaseMarginMs: number;
  /** The ping-pong guard of §8 (agent-loop.ts): a run of this many automatic replies gets no turn. */
  autoReplyLimit: number;
  /** Aborted when the service stops: the turn stops where it is, to be resumed. */
  stopping: AbortSignal;
  /** Where the spans go: `invoke_agent {agent}` per run of a turn, `execute_tool {tool}` per tool call (OpenTelemetry GenAI conventions). */
  tracer: Tracer;
  /** A provider failure, handled as the loop handles one of a reply (backoff, refused key, rate limit); it parks the row. */
  onProviderFailure(claim: Claim, agent: AgentContext, failure: ProviderFailure, reason: string): Promise<void>;
  /** Called when the daily budget is found spent before a step; it parks the row until the next UTC day. */
  onBudgetSpent(claim: Claim, agent: AgentContext): Promise<void>;
}

/** The runner of turns: `run` works on one claimed row of an agent with tools and parks it. */
export interface TurnRunner {
  /** Runs (or resumes) the turn of a claimed row as far as it goes, then parks the row. Errors: none of its own (a failure of storage is thrown, and the loop backs off). */
  run(claim: Claim, agent: AgentContext, provider: ReplyProvider, apiKey: string): Promise<void>;
}

/** Thrown when the claim was taken over by another process: stop, write nothing more. */
class LostClaim extends Error {}

/** A refusal of the domain as a tool error: off the agent's edges (or made up) is `not_on_your_edges`. */
function toolErrorOf(error: unknown, log: LoopLogger, where: Record<string, unknown>): string {
  if (error instanceof ServiceError) {
    if (error.code === 'not_found' || error.code === 'not_a_participant') return `not_on_your_edges: ${error.message}`;
    return `${error.code}: ${error.message}`;
  }
  if (error instanceof RemoteToolError) return `${error.code}: ${error.message}`;
  log.error({ ...where, reason: (error as Error).message }, 'a tool call failed unexpectedly');
  return 'internal: the tool failed unexpectedly';
}

/** The label of a tool as approvals and records name it: `tool`, or `SERVER.TOOL`. */
function toolLabel(tool: Pick<TurnTool, 'tool' | 'server'> | Pick<ToolCallRow, 'tool' | 'server'>): string {
  return tool.server === null ? tool.tool : `${tool.server}.${tool.tool}`;
}

/** A Zod error in one line, for a model to read. */
function issuesText(error: { issues: Array<{ path: PropertyKey[]; message: string }> }): string {
  return error.issues.map((i) => `${i.path.length > 0 ? i.path.join('.') : '(arguments)'}: ${i.message}`).join('; ');
}

/**
 * Creates the turn runner over the loop's options. Output: {@link TurnRunner}.
 */
export function createTurnRunner(options: TurnRunnerOptions): TurnRunner {
  const { deps, log, tracer } = options;
  const db = deps.db;
  const policy = deps.urls ?? { allowPrivate: false };

  const park = (claim: Claim, due: Parameters<typeof parkRow>[2], changes: { handledSeq?: number; failures?: number } = {}) => parkRow(db, claim, due, changes);

  /** The thread as the agent saw it when `turn`'s message arrived: its last 50 messages, oldest first, and the message itself. */
  async function contextOf(turn: TurnRow): Promise<{ context: ContextMessage[]; answering: string }> {
    const rows = await db.query<{ sender_id: string; content: string; seq: number }>(
      `SELECT sender_id, content, seq FROM messages WHERE thread_id = $1 AND seq <= $2 ORDER BY seq DESC LIMIT $3`,
      [turn.thread_id, turn.message_seq, contextMessages],
    );
    const context = rows.reverse().map((m): ContextMessage => ({ role: m.sender_id === turn.agent_id ? 'assistant' : 'user', content: m.content }));
    return { context, answering: rows.find((m) => m.seq === turn.message_seq)?.content ?? context.at(-1)?.content ?? '' };
  }

  /**
   * Runs `fn` in a transaction of `turn`'s and, after its commit, announces the organization's
   * events and signals the live items of the turn's thread (its tool calls' changes, §13).
   */
  async function inTx<T>(turn: Pick<TurnRow, 'org_id' | 'thread_id'>, fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const value = await db.transaction(fn);
    deps.events.announce(turn.org_id);
    signalLive(deps.events, turn.thread_id);
    return value;
  }

  /** The span of one tool call (OpenTelemetry GenAI conventions: `execute_tool`). */
  async function traced<T>(call: Pick<ToolCallRow, 'id' | 'tool' | 'server'>, fn: () => Promise<T>): Promise<T> {
    return tracer.startActiveSpan(`execute_tool ${toolLabel(call)}`, async (span: Span) => {
      span.setAttributes({
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': toolLabel(call),
        'gen_ai.tool.call.id': call.id,
        'gen_ai.tool.type': call.server === null ? 'function' : 'extension',
      });
      try {
        return await fn();
      } catch (error) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
        throw error;
      } finally {
        span.end();
      }
    });
  }

  /**
   * Brings one call of the latest step as far as it goes now. Output: the deadline it waits for
   * (an ask or an approval without its answer yet), or undefined once it is final.
   */
  async function settle(call: ToolCallRow, turn: TurnRow, agent: AgentContext, tools: AgentTools, toolbox: () => Promise<Toolbox>): Promise<Date | undefined> {
    const actor: AgentIdentity = { agentId: turn.agent_id, teamId: turn.team_id, orgId: turn.org_id, keyId: turn.id };
    const where = { agent_id: turn.agent_id, thread_id: turn.thread_id, tool_call_id: call.id, tool: toolLabel(call) };
    const deadline = () => new Date(Date.now() + tools.ask_timeout_seconds * 1000);
    const fail = (from: ToolCallRow['status'], error: string, status: 'failed' | 'rejected' = 'failed') => inTx(turn, (tx) => moveCall(tx, call, from, { status, error }));

    switch (call.status) {
      case 'completed':
      case 'failed':
      case 'rejected':
        return undefined;

      case 'running': {
        // A call with no question to wait for that is still running was running in a process that
        // is gone (this row's claim is the only one): it may or may not have happened.
        if (call.wait_thread === null) {
          await fail('running', 'interrupted: the process running this call stopped before it finished; it may or may not have taken effect');
          return undefined;
        }
        return settleAsk(call, turn, tools);
      }

      case 'awaiting_approval': {
        if (call.wait_thread === null) {
          const approver = tools.approval ? await findApprover(db, actor, tools.approval.by) : { unavailable: 'the agent has no approval settings any more' };
          if ('unavailable' in approver) {
            await fail('awaiting_approval', `approval_unavailable: ${approver.unavailable}`);
            return undefined;
          }
          const at = deadline();
          const moved = await inTx(turn, async (tx) => {
            const question = await writeQuestion(tx, actor, { edgeId: approver.edgeId, teamId: approver.teamId, peerId: approver.humanId, peerName: approver.name, peerKind: 'human', threadId: null }, {
              content: approvalQuestion(agent.name, toolLabel(call), call.arguments),
              subject: `Approval: ${toolLabel(call)}`.slice(0, 200),
            });
            return moveCall(tx, call, 'awaiting_approval', {
              status: 'awaiting_approval',
              wait: { participant: approver.humanId, thread: question.threadId, message: question.messageId, afterSeq: question.seq, deadline: at },
              attempts: 1,
            });
          });
          return moved ? at : undefined;
        }
        const answer = await findAnswer(db, { threadId: call.wait_thread, participantId: call.wait_participant!, afterSeq: call.wait_after_seq! });
        if (!answer) {
          if (call.wait_deadline && call.wait_deadline.getTime() <= Date.now()) {
            await fail('awaiting_approval', `rejected: nobody approved it within ${tools.ask_timeout_seconds} s (approval_timeout)`, 'rejected');
            return undefined;
          }
          return call.wait_deadline ?? deadline();
        }
        const decision = parseApproval(answer.content);
        if (decision.ok && decision.reply.decision === 'approve') {
          const approved = await inTx(turn, (tx) => moveCall(tx, call, 'awaiting_approval', { status: 'pending' }));
          return approved ? settle(approved, turn, agent, tools, toolbox) : undefined;
        }
        if (decision.ok) {
          const by = tools.approval?.by ?? 'the approver';
          await fail('awaiting_approval', `rejected: ${by} rejected it${decision.reply.comment ? `: ${decision.reply.comment}` : ''}`, 'rejected');
          return undefined;
        }
        if (call.attempts >= maxApprovalAttempts) {
          await fail('awaiting_approval', `rejected: the approver's answers could not be read as approve or reject (reply_invalid)`, 'rejected');
          return undefined;
        }
        return reask(call, turn, 'awaiting_approval', approvalReask(call.attempts + 1));
      }

      case 'pending':
        return start(call, turn, agent, tools, toolbox, actor, where);
    }
  }

  /** Writes a follow-up question in the call's wait thread and waits again after it. */
  async function reask(call: ToolCallRow, turn: TurnRow, status: 'running' | 'awaiting_approval', text: string): Promise<Date | undefined> {
    const at = call.wait_deadline ?? new Date(Date.now() + 86_400_000);
    const moved = await inTx(turn, async (tx) => {
      const message = await insertMessage(tx, call.wait_thread!, turn.agent_id, text, { expectsReply: true });
      // A question asked again in a task's thread is the task's status message now (§12).
      if (status === 'running') await markTaskInputRequired(tx, { threadId: call.wait_thread!, agentId: turn.agent_id, peerId: call.wait_participant!, messageId: message.id });
      return moveCall(tx, call, status, {
        status,
        wait: { participant: call.wait_participant!, thread: call.wait_thread!, message: message.id, afterSeq: message.seq, deadline: at },
        attempts: call.attempts + 1,
      });
    }).catch((error: unknown) => {
      // The wait's thread was deleted (its edge went): the question cannot be asked again.
      if (error instanceof ServiceError && error.code === 'not_found') return undefined;
      throw error;
    });
    if (!moved) {
      await inTx(turn, (tx) => moveCall(tx, call, status, { status: 'failed', error: 'not_on_your_edges: the thread of the question is gone' }));
      return undefined;
    }
    return at;
  }

  /** An ask that waits: its answer, a re-ask, or its timeout. */
  async function settleAsk(call: ToolCallRow, turn: TurnRow, tools: AgentTools): Promise<Date | undefined> {
    const peer = await db.query<{ id: string; name: string; kind: string; provider: string | null; remote: boolean }>(
      `SELECT id, name, kind, provider, a2a IS NOT NULL AS remote FROM participants WHERE id = $1`,
      [call.wait_participant],
    );
    // An agent that runs in the service (a provider agent's turn, a remote A2A agent's exchange)
    // answers with a reply to the question; what it writes into the thread before is not the answer.
    const replyTo = answerReplyTo(peer[0], call.wait_message!);
    const answer = await findAnswer(db, { threadId: call.wait_thread!, participantId: call.wait_participant!, afterSeq: call.wait_after_seq!, replyTo });
    if (!answer) {
      if (call.wait_deadline && call.wait_deadline.getTime() <= Date.now()) {
        const name = peer[0]?.name ?? call.wait_participant!;
        await inTx(turn, (tx) => moveCall(tx, call, 'running', { status: 'failed', error: `ask_timeout: no answer from ${name} within ${tools.ask_timeout_seconds} s` }));
        return undefined;
      }
      return call.wait_deadline ?? undefined;
    }
    const from = { participant_id: call.wait_participant!, name: peer[0]?.name ?? call.wait_participant!, kind: peer[0]?.kind ?? 'agent' };
    const args = call.arguments as Partial<AskArgs>;
    const judged = judgeAnswer(answer, { from, threadId: call.wait_thread!, replySchema: args.reply_schema, attempt: call.attempts, peer: peer[0] });
    if (judged.kind === 'result') {
      await inTx(turn, (tx) => moveCall(tx, call, 'running', { status: 'completed', result: boundedResult(judged.result) }));
      return undefined;
    }
    if (judged.kind === 'invalid') {
      await inTx(turn, (tx) =>
        moveCall(tx, call, 'running', { status: 'failed', error: `reply_invalid: ${from.name}'s answers did not fit reply_schema: ${judged.problems.join('; ')}`.slice(0, 4000) }),
      );
      return undefined;
    }
    return reask(call, turn, 'running', judged.message);
  }

  /** Starts a pending call: an ask writes its question and waits; any other tool runs now. */
  async function start(
    call: ToolCallRow,
    turn: TurnRow,
    _agent: AgentContext,
    tools: AgentTools,
    openBox: () => Promise<Toolbox>,
    actor: AgentIdentity,
    where: Record<string, unknown>,
  ): Promise<Date | undefined> {
    const toolbox = await openBox();
    const tool = toolbox.tools.find((t) => t.tool === call.tool && t.server === call.server) ?? toolbox.find(call.model_name);
    if (!tool) {
      const why = call.server !== null && toolbox.unreachable.has(call.server) ? `tool_failed: ${toolbox.unreachable.get(call.server)}` : `unknown_tool: ${toolLabel(call)} is not offered any more`;
      await inTx(turn, (tx) => moveCall(tx, call, 'pending', { status: 'failed', error: why }));
      return undefined;
    }
    if (tool.kind === 'ask') {
      const args = tool.schema!.parse(call.arguments) as AskArgs;
      let target;
      try {
        target = await resolveAskTarget(db, actor, args);
        // Asking back (§12): a question to the requester of the task this turn works on goes into
        // the task's thread, unless the ask names a thread of its own.
        if (target.threadId === null) {
          const back = await askBackThread(db, turn.thread_id, turn.agent_id, target.peerId);
          if (back !== undefined) target = { ...target, threadId: back };
        }
      } catch (error) {
        await inTx(turn, (tx) => moveCall(tx, call, 'pending', { status: 'failed', error: toolErrorOf(error, log, where) }));
        return undefined;
      }
      let content: string;
      try {
        content = questionText(args.content, args.reply_schema);
      } catch (error) {
        await inTx(turn, (tx) => moveCall(tx, call, 'pending', { status: 'failed', error: toolErrorOf(error, log, where) }));
        return undefined;
      }
      const at = new Date(Date.now() + tools.ask_timeout_seconds * 1000);
      const moved = await inTx(turn, async (tx) => {
        const question = await writeQuestion(tx, actor, target, { content, subject: args.subject });
        // A question to the requester in a task's thread makes the task input-required (§12).
        await markTaskInputRequired(tx, { threadId: question.threadId, agentId: turn.agent_id, peerId: target.peerId, messageId: question.messageId });
        return moveCall(tx, call, 'pending', {
          status: 'running',
          wait: { participant: target.peerId, thread: question.threadId, message: question.messageId, afterSeq: question.seq, deadline: at },
          attempts: 1,
        });
      }).catch(async (error: unknown) => {
        await inTx(turn, (tx) => moveCall(tx, call, 'pending', { status: 'failed', error: toolErrorOf(error, log, where) }));
        return undefined;
      });
      return moved ? at : undefined;
    }
    const timeoutMs = tools.tool_timeout_seconds * 1000;
    if (tool.kind === 'team' && tool.team?.annotations.readOnlyHint === true) {
      // A tool that only reads (whoami, list_edges, list_threads) has no effect to make at most
      // once: it runs first, and its start and end are recorded together, one commit instead of two.
      const args = tool.schema!.parse(call.arguments) as Record<string, unknown>;
      const outcome = await traced(call, async () => {
        try {
          return { result: await tool.team!.run({ deps, agent: actor, signal: AbortSignal.any([options.stopping, AbortSignal.timeout(timeoutMs)]) }, args) };
        } catch (error) {
          return { error: toolErrorOf(error, log, where) };
        }
      });
      if (options.stopping.aborted && 'error' in outcome) return undefined;
      await inTx(turn, async (tx) => {
        const running = await moveCall(tx, call, 'pending', { status: 'running' });
        if (running) await moveCall(tx, running, 'running', 'result' in outcome ? { status: 'completed', result: boundedResult(outcome.result) } : { status: 'failed', error: outcome.error });
      });
      return undefined;
    }
    const running = await inTx(turn, (tx) => moveCall(tx, call, 'pending', { status: 'running' }));
    if (!running) return undefined;
    const outcome = await traced(running, async () => {
      try {
        if (tool.kind === 'team') {
          const args = tool.schema!.parse(call.arguments) as Record<string, unknown>;
          const signal = AbortSignal.any([options.stopping, AbortSignal.timeout(timeoutMs)]);
          return { result: await tool.team!.run({ deps, agent: actor, signal }, args) };
        }
        const args = (call.arguments && typeof call.arguments === 'object' ? call.arguments : {}) as Record<string, unknown>;
        return { result: await tool.remote!.call(tool.tool, args, timeoutMs, options.stopping) };
      } catch (error) {
        return { error: toolErrorOf(error, log, where) };
      }
    });
    if (options.stopping.aborted && 'error' in outcome) {
      // Stopped with the service: the call is left running and found interrupted at the resume.
      return undefined;
    }
    await inTx(turn, (tx) =>
      moveCall(tx, running, 'running', 'result' in outcome ? { status: 'completed', result: boundedResult(outcome.result) } : { status: 'failed', error: outcome.error }),
    );
    return undefined;
  }

  /** The identity a turn's team tools act as: its agent (no key: a turn has none; `wait_for_messages`, which re-checks one, is not offered). */
  function actor(turn: TurnRow): AgentIdentity {
    return { agentId: turn.agent_id, teamId: turn.team_id, orgId: turn.org_id, keyId: turn.id };
  }

  /**
   * Makes, before they are recorded, the calls of a step that only read (team tools with
   * `readOnlyHint`: whoami, list_edges, list_threads), side by side: making one twice could change
   * nothing, so it need not be recorded as running first, and the step's record then holds it
   * final — one transaction for the step instead of one more per call. Sets each such call's
   * status, result or error, and `ran`.
   */
  async function runReadOnly(calls: NewToolCall[], toolbox: Toolbox, turn: TurnRow, agent: AgentIdentity, timeoutMs: number): Promise<void> {
    await Promise.all(
      calls.map(async (call) => {
        if (call.status !== 'pending' || call.server !== null) return;
        const tool = toolbox.find(call.modelName);
        if (tool?.kind !== 'team' || tool.team?.annotations.readOnlyHint !== true) return;
        const where = { agent_id: turn.agent_id, thread_id: turn.thread_id, tool_call_id: call.id, tool: call.tool };
        const outcome = await traced({ id: call.id, tool: call.tool, server: null }, async () => {
          try {
            const args = tool.schema!.parse(call.arguments) as Record<string, unknown>;
            return { result: await tool.team!.run({ deps, agent, signal: AbortSignal.any([options.stopping, AbortSignal.timeout(timeoutMs)]) }, args) };
          } catch (error) {
            return { error: toolErrorOf(error, log, where) };
          }
        });
        if ('result' in outcome) Object.assign(call, { status: 'completed', result: boundedResult(outcome.result), ran: true });
        else Object.assign(call, { status: 'failed', error: outcome.error, ran: true });
      }),
    );
  }

  /**
   * What a step's tool calls become as records: each checked against the tool it names (unknown
   * tools, arguments that do not fit, and calls past 32 fail at once, with why; a tool of a
   * server that cannot be reached this time fails `tool_failed` with why), and those
   * `approval.tools` names wait for their approval.
   */
  function newCalls(reply: StepReply, toolbox: Toolbox, tools: AgentTools, lastStep: boolean, maxSteps: number): NewToolCall[] {
    const approvals = new Set(tools.approval?.tools ?? []);
    return reply.toolCalls.map((call, i): NewToolCall => {
      const tool = toolbox.find(call.name);
      const base = { id: newId(), modelCallId: call.id, modelName: call.name, tool: tool?.tool ?? call.name, server: tool?.server ?? null, arguments: call.input };
      const failed = (error: string): NewToolCall => ({ ...base, status: 'failed', error });
      if (lastStep) return failed(`max_steps: the turn reached its limit of ${maxSteps} steps; this call was not made`);
      if (i >= maxToolCallsPerStep) return failed(`too_many_tool_calls: at most ${maxToolCallsPerStep} tool calls per step; this one was not made`);
      if (!tool) {
        // A tool of a server that cannot be reached this time is not offered, yet it is no
        // unknown tool: the model is told the server failed (contract §11), and may try later.
        const down = [...toolbox.unreachable].find(([server]) => call.name.startsWith(`${server}__`));
        if (down) return { ...base, tool: call.name.slice(down[0].length + 2), server: down[0], status: 'failed', error: `tool_failed: ${down[1]}` };
        return failed(`unknown_tool: no tool named ${call.name} (the tools you have are listed in this request)`);
      }
      if (call.invalid) return failed(`invalid_arguments: ${call.invalid}`);
      if (tool.schema) {
        const parsed = tool.schema.safeParse(call.input);
        if (!parsed.success) return failed(`invalid_arguments: ${issuesText(parsed.error)}`);
      } else if (call.input === null || typeof call.input !== 'object' || Array.isArray(call.input)) {
        return failed('invalid_arguments: the arguments must be a JSON object');
      }
      return { ...base, status: approvals.has(toolLabel(tool)) ? 'awaiting_approval' : 'pending' };
    });
  }

  /** The note a reply ends with when the turn ran out of steps. */
  const maxStepsNote = (maxSteps: number) =>
    `(This turn reached its limit of ${maxSteps} steps (max_steps) before it finished; the tool calls of its last step were not made.)`;

  /**
   * Posts the reply under the id fixed when the turn started (`stopped`: the text written before a
   * stop, §13), records the last step (if it asked for calls that are not made) and its usage (none
   * for a step cut by a stop: its stream reported none), ends the turn and moves the row's mark past
   * the message, in one transaction; with `onTask` (the thread's task is assigned to the agent,
   * §12), a reply that was not stopped completes the task with the reply as an artifact there too.
   */
  async function complete(
    claim: Claim,
    agent: AgentContext,
    turn: TurnRow,
    reply: StepReply | undefined,
    text: string,
    unmade: NewToolCall[],
    replyId: string,
    how: { stopped?: boolean; onTask?: boolean } = {},
  ): Promise<void> {
    const stopped = how.stopped === true;
    try {
      await inTx(turn, async (tx) => {
        if (reply && unmade.length > 0) await recordStep(tx, turn, reply.assistant, unmade, undefined);
        const message = await insertMessage(tx, turn.thread_id, turn.agent_id, text.slice(0, maxContent), { replyTo: turn.message_id, id: replyId, stopped });
        if (how.onTask && !stopped) await completeTaskWithReply(tx, { threadId: turn.thread_id, agentId: turn.agent_id, messageId: message.id, text: message.content });
        if (reply) await recordUsage(tx, claim, agent, reply, message.id);
        await finishTurn(tx, turn.id, { replyId: message.id });
        await parkRow(tx, claim, { inMs: 0 }, { handledSeq: turn.message_seq, failures: 0 });
      });
    } catch (error) {
      // Answered already (a process whose lease ran out): that answer stands; this step was paid.
      if (isUniqueViolation(error) || (error instanceof ServiceError && (error.code === 'not_found' || error.code === 'conflict'))) {
        if (reply) await db.transaction((tx) => recordUsage(tx, claim, agent, reply, null)).catch(() => {});
        if (error instanceof ServiceError && error.code === 'conflict') throw new LostClaim();
        return;
      }
      throw error;
    }
  }

  /**
   * Ends a turn a stop was asked of (§13): its calls not final fail (`stopped`; a call running in
   * this process finished before this), and the text written so far in its step is posted as the
   * reply with `stopped: true`.
   */
  async function completeStopped(claim: Claim, agent: AgentContext, turn: TurnRow, text: string, replyId: string): Promise<void> {
    const open = (await callsOfTurn(db, turn.id)).filter((c) => c.status === 'pending' || c.status === 'awaiting_approval' || c.status === 'running');
    for (const call of open) {
      await inTx(turn, (tx) => moveCall(tx, call, call.status, { status: 'failed', error: 'stopped: the turn was stopped before this call finished; it was not made (or not waited for)' }));
    }
    await complete(claim, agent, turn, undefined, stoppedText(text), [], replyId, { stopped: true });
  }

  async function runTurn(claim: Claim, agent: AgentContext, provider: ReplyProvider, apiKey: string, span: Span): Promise<void> {
    const tools = toolsResource(agent.tools)!;
    let turn = await openTurnOf(db, claim.agent_id, claim.thread_id);
    if (!turn) {
      const recent = await db.query<ThreadMessage>(nextSql, [claim.thread_id, claim.handled_seq, claim.agent_id, Math.max(contextMessages, options.autoReplyLimit)]);
      const incoming = recent[0];
      if (!incoming) return park(claim, { inMs: 0 }, { handledSeq: claim.latest_seq });
      if (endsAutoReplyRun(recent, options.autoReplyLimit)) return park(claim, { inMs: 0 }, { handledSeq: incoming.seq });
      // No turn starts on the thread of a canceled task of the agent's (§12): the requester withdrew what it asked.
      if ((await taskAssignedOnThread(db, claim.thread_id, claim.agent_id))?.state === 'canceled') return park(claim, { inMs: 0 }, { handledSeq: claim.latest_seq });
      turn = await startTurn(db, { agentId: claim.agent_id, threadId: claim.thread_id, messageId: incoming.id, messageSeq: incoming.seq, orgId: agent.org_id, teamId: agent.team_id });
      if (turn.state === 'completed' || turn.state === 'failed') return park(claim, { inMs: 0 }, { handledSeq: turn.message_seq });
    }
    span.setAttribute('acs.turn.id', turn.id);
    // The thread's task, when assigned to the agent (§12): the turn works on it (moved to working
    // once this run of the turn calls the model, at its start or when an answer it waited for came)
    // and its reply completes it. Read once the stop is watched (below).
    let onTask = false;
    let taskWorking = false;
    // A turn made by this run has written nothing yet; any other (taken up again) may have.
    const resumed = turn.fresh !== true;
    const replyId = await fixTurnReplyId(db, turn);
    // A turn taken up again (its process died, a call failed, an answer came) goes on with the
    // reply's deltas where they were, saying so when a step had been cut half-way.
    let nextIndex = resumed ? await resumeDeltas(db, deps.events, turn.thread_id, replyId, turn.agent_id) : 0;
    if (!provider.step) {
      return options.onProviderFailure(claim, agent, new ProviderFailure('failed', `provider ${agent.provider} cannot call tools`), `provider ${agent.provider} cannot call tools`);
    }
    const { context, answering } = await contextOf(turn);
    let secrets: ToolSecrets = {};
    try {
      secrets = openToolSecrets(deps.secrets, agent.tool_secrets);
    } catch {
      log.error({ agent_id: claim.agent_id, org_id: agent.org_id }, 'the header values of the agent\'s MCP servers cannot be decrypted with this process\'s encryption key (ACS_ENCRYPTION_KEY): its servers are called without them');
    }
    // Remote servers are connected to only when the turn needs them (a step, a call to make), not
    // when it is taken up only to find that an answer it waits for has not come.
    let opened: Promise<Toolbox> | undefined;
    const toolbox = (): Promise<Toolbox> =>
      (opened ??= openToolbox(tools, secrets, policy, Math.min(tools.tool_timeout_seconds, 30) * 1000, options.stopping).then((box) => {
        for (const [server, why] of box.unreachable) log.warn({ agent_id: claim.agent_id, server, reason: why }, 'an MCP server of the agent cannot be reached: its tools are not offered this time');
        return box;
      }));
    let current: TurnRow = turn;
    const leaseSeconds = (Math.max(options.callTimeoutMs, tools.tool_timeout_seconds * 1000) + options.leaseMarginMs) / 1000;
    // The loop reads the turn's flag at each step, after the watch began: no stop falls between.
    const stop = watchStop(deps.events, turn.thread_id, () => turnStopRequested(db, turn.id), { lookNow: false });
    const onDeltaError = (error: unknown) => log.warn({ agent_id: claim.agent_id, thread_id: claim.thread_id, reason: (error as Error).message }, 'agent loop: a delta of a reply could not be written');
    // The lease is extended when less of it is left than a step may take (not at every step: a
    // statement each time); the calls of finished steps are read once and kept.
    let leaseUntil = 0;
    let earlier: ToolCallRow[] | undefined;
    let recorded: ToolCallRow[] | undefined;
    try {
      // Canceled (§12: domain/tasks.ts stops the assignee's turn as a stop does): read after the
      // watch began, so a cancel committed before is seen here (a turn made after the cancel's stop
      // flagged the thread's turns has no flag of its own) and a later one is signalled.
      const task = await taskAssignedOnThread(db, current.thread_id, current.agent_id);
      onTask = task !== undefined;
      if (current.stop_requested || task?.state === 'canceled') return completeStopped(claim, agent, current, '', replyId);
      for (;;) {
        if (options.stopping.aborted) return park(claim, { inMs: 0 });
        if (stop.signal.aborted) return completeStopped(claim, agent, current, '', replyId);
        if (leaseUntil - Date.now() < (leaseSeconds * 1000) / 2) {
          if (!(await extendLease(db, claim, leaseSeconds))) throw new LostClaim();
          leaseUntil = Date.now() + leaseSeconds * 1000;
        }
        const calls = recorded ?? (current.steps > 0 ? await callsOfStep(db, current.id, current.steps) : []);
        recorded = undefined;
        const waits = await Promise.all(calls.map((call) => settle(call, current, agent, tools, toolbox)));
        if (options.stopping.aborted) return park(claim, { inMs: 0 });
        const pending = waits.filter((at): at is Date => at !== undefined);
        if (pending.length > 0) {
          await setTurnState(db, current.id, 'suspended');
          const at = new Date(Math.min(...pending.map((d) => d.getTime())));
          return park(claim, { at }, { failures: 0 });
        }
        // Settling may have started calls that were approved meanwhile: look again until all are final.
        // Calls final when read (made before their record) are as read; others are read again.
        const final = (c: ToolCallRow) => c.status === 'completed' || c.status === 'failed' || c.status === 'rejected';
        const again = calls.every(final) ? calls : current.steps > 0 ? await callsOfStep(db, current.id, current.steps) : [];
        if (again.some((c) => c.status === 'pending' || c.status === 'awaiting_approval' || c.status === 'running')) continue;
        if (agent.max_tokens_per_day !== null && (await tokensToday(db, claim.agent_id)) >= agent.max_tokens_per_day) {
          return options.onBudgetSpent(claim, agent);
        }
        if (onTask && !taskWorking) {
          taskWorking = true;
          await startTaskWork(deps, current.thread_id, current.agent_id);
        }
        earlier ??= (await callsOfTurn(db, current.id)).filter((c) => c.step < current.steps);
        const messages = stepMessages(context, current.transcript, [...earlier, ...again]);
        const timeout = AbortSignal.timeout(options.callTimeoutMs);
        const writer = createDeltaWriter({ db, hub: deps.events, threadId: current.thread_id, messageId: replyId, senderId: current.agent_id }, { startIndex: nextIndex, maxChars: maxContent, onError: onDeltaError });
        let reply: StepReply;
        try {
          reply = await provider.step({
            apiKey,
            model: agent.model,
            instructions: agent.instructions,
            messages,
            tools: (await toolbox()).offered(),
            answering,
            signal: AbortSignal.any([options.stopping, timeout, stop.signal]),
            onText: (text) => writer.push(text),
          });
        } catch (error) {
          await writer.flush();
          nextIndex = writer.written();
          if (options.stopping.aborted) return park(claim, { inMs: 0 });
          if (stop.signal.aborted) return completeStopped(claim, agent, current, writer.text(), replyId);
          const failure = error instanceof ProviderFailure ? error : new ProviderFailure('failed', error instanceof Error ? redactKey(error.message, apiKey) : String(error));
          const reason = timeout.aborted ? `timed out after ${options.callTimeoutMs} ms` : failure.message;
          if (failure.paid) await db.transaction((tx) => recordUsage(tx, claim, agent, failure.paid!, null));
          return options.onProviderFailure(claim, agent, failure, reason);
        }
        await writer.flush();
        nextIndex = writer.written();
        const lastStep = current.steps + 1 >= agent.max_steps;
        const box = await toolbox();
        if (reply.toolCalls.length === 0 || lastStep) {
          const unmade = reply.toolCalls.length > 0 ? newCalls(reply, box, tools, true, agent.max_steps) : [];
          if (unmade.length === 0) return complete(claim, agent, current, reply, reply.text, unmade, replyId, { onTask });
          // The note the reply ends with is written as the rest of it (§13: its deltas joined are the reply).
          const ending = `${reply.text.trim() === '' ? '' : '\n\n'}${maxStepsNote(agent.max_steps)}`;
          writer.push(ending);
          await writer.flush();
          return complete(claim, agent, current, reply, reply.text + ending, unmade, replyId, { onTask });
        }
        const stepCalls = newCalls(reply, box, tools, false, agent.max_steps);
        await runReadOnly(stepCalls, box, current, actor(current), tools.tool_timeout_seconds * 1000);
        // The step, its calls (those that only read made already) and the stream's `turn.step` (the
        // text streamed in this step was not the reply, §13) in one transaction.
        const step: { turn: TurnRow; calls: ToolCallRow[] } = await inTx(current, async (tx) => {
          await recordUsage(tx, claim, agent, reply, null);
          return recordStep(tx, current, reply.assistant, stepCalls, { replyId });
        }).catch((error: unknown) => {
          if (error instanceof ServiceError && error.code === 'conflict') throw new LostClaim();
          throw error;
        });
        signalLive(deps.events, current.thread_id);
        // The step before is final now: its calls join those kept; the new step's are known.
        earlier.push(...again);
        recorded = step.calls;
        current = step.turn;
      }
    } finally {
      stop.dispose();
      if (opened) await (await opened).close();
    }
  }

  return {
    async run(claim, agent, provider, apiKey) {
      return tracer.startActiveSpan(`invoke_agent ${agent.name}`, async (span) => {
        span.setAttributes({
          'gen_ai.operation.name': 'invoke_agent',
          'gen_ai.agent.id': claim.agent_id,
          'gen_ai.agent.name': agent.name,
          'gen_ai.provider.name': agent.provider ?? '',
          'gen_ai.request.model': agent.model ?? '',
          'gen_ai.conversation.id': claim.thread_id,
        });
        try {
          await runTurn(claim, agent, provider, apiKey, span);
        } catch (error) {
          if (error instanceof LostClaim) {
            log.warn({ agent_id: claim.agent_id, thread_id: claim.thread_id }, 'a turn was taken over by another process; this one stopped working on it');
            return;
          }
          span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
          throw error;
        } finally {
          span.end();
        }
      });
    },
  };
}

