/**
 * Remote A2A agents as teammates (contract §12, "A2A participants"): the agent loop's work for an
 * agent declared with `a2a: {url, headers?}`. A claimed work row (agent, thread) sends the oldest
 * message of the other participant that the remote has not answered yet, with `@a2a-js/sdk`'s
 * client (remote-client.ts), and records what comes back (remote-record.ts):
 *
 * - **Sending.** `SendStreamingMessage` when the remote's card says it streams, else
 *   `SendMessage`. Our message's id is the A2A `messageId`, our thread's id the `contextId` (or the
 *   context the remote named before); the answer to a question (`input-required`) goes with the
 *   remote's `taskId`. The card is read once per agent and kept for ten minutes (read again after a
 *   failure).
 * - **Recording.** Status messages and messages are posted into the thread as the remote agent;
 *   artifacts become the task's artifacts (when they are complete: the task final or asking);
 *   `working` keeps the task working, `input-required` posts the question expecting the
 *   requester's reply (the task `input-required`), `completed`, `failed`, `canceled` and `rejected`
 *   set the task's state with the remote's last message (or, completed without one, the
 *   artifacts' text) as the reply. A thread without a task gets the same messages. The question
 *   and the final answer each reply to our message (`reply_to`: one per message), so an agent
 *   that asked with `ask` (§11) gets either as its answer, not a status message before it, and
 *   answers a question in the same thread, which continues the remote's task. Files (bytes, or by
 *   URL) are kept as attachments (remote-files.ts): file parts of the task's artifacts and
 *   attachments of the message that carries them; the message that settles the exchange carries
 *   the artifacts' files too.
 * - **As it is written** (§13): the chunks of an artifact the remote streams are written as
 *   `message.delta`s of the reply, whose id is fixed before the exchange (remote-deltas.ts); the
 *   message that replies to ours is posted with it.
 * - **Ping-pong guard** (agent-loop.ts `autoReplyLimit`): a message that ends a run of automatic
 *   replies (work.ts `automaticSql`: what the remote's exchanges recorded counts) is not sent.
 * - **Faults.** The remote down, slow, or cut off mid-answer: the row is retried with backoff and
 *   the task stays `working`; the next attempt asks the remote about the task it was working on
 *   (`GetTask`, then `SubscribeToTask` when it streams) and sends our message again only when the
 *   remote no longer knows that task (it restarted). The remote answering what A2A does not allow
 *   (not JSON, not A2A, a task of another id, a card that does not parse, an A2A error): the task
 *   fails with the reason, posted as its status message, and the message counts as answered.
 *   Nothing is posted twice (remote-record.ts).
 * - **Cancel.** Our task canceled (domain/tasks.ts) cuts the exchange in progress, and the remote is
 *   sent `CancelTask` for its task and followed no more; a row claimed for a canceled task sends
 *   the remote nothing more than that (remote-cancel.ts).
 * - Header values are opened only here, for the requests, and never logged: every error text is
 *   redacted (remote-client.ts).
 */
import { createHash } from 'node:crypto';
import { Role, TaskState as A2aState, type Message as A2aMessage, type Part as A2aPart, type StreamResponse, type Task as A2aTask } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { TaskNotFoundError } from '@a2a-js/sdk/errors';
import type { TaskState } from '../../api/tasks.ts';
import { ServiceError } from '../../errors/catalogue.ts';
import { a2aResource, openA2aSecrets } from '../domain/a2a-participant.ts';
import type { DomainDeps } from '../domain/caller.ts';
import { startTaskWork, taskAssignedOnThread } from '../domain/task-turns.ts';
import { endsAutoReplyRun, parkRow, recentMessages, watchStop, type AgentContext, type Claim, type Due, type LoopLogger } from '../agent-loop/work.ts';
import { fetchRemoteCard, isTransient, isUrlRefusal, RemoteNonsense, remoteClient, remoteErrorText, RemoteUnavailable, type RemoteAgent, type RemoteCard } from './remote-client.ts';
import { noteRemoteTask, noteSending, readExchange, recordOutcome, type Outcome, type PendingFile, type RemoteArtifact, type RemoteMessage } from './remote-record.ts';
import { maxTaskArtifacts } from '../../api/tasks.ts';
import { attachmentParts, defaultFileLimits, fileBudget, readRemoteParts, type FileBudget, type FileLimits, type ReadParts } from './remote-files.ts';
import { liveRemoteTask, maxCancelAttempts, sendRemoteCancel } from './remote-cancel.ts';
import { appendParts, RemoteReplyStream } from './remote-deltas.ts';
import { fromA2aState, toA2aPart } from './task-mapping.ts';

/** What the runner needs of the agent loop. */
export interface RemoteRunnerOptions {
  deps: DomainDeps;
  log: LoopLogger;
  /** Longest exchange with the remote (one send and its answer, or one resumption), in milliseconds; then it is retried. */
  callTimeoutMs: number;
  /** The loop's backoff after `failures` failures, in milliseconds. */
  backoffMs(failures: number): number;
  /** The ping-pong guard (agent-loop.ts): a message ending a run of this many automatic replies is not sent. */
  autoReplyLimit: number;
  /** Aborted when the service stops: the exchange stops where it is, to be resumed. */
  stopping: AbortSignal;
  /** The bounds on files (remote-files.ts {@link FileLimits}); default {@link defaultFileLimits}. Tests make them small. */
  fileLimits?: FileLimits | undefined;
}

/** The runner of remote A2A agents' work. */
export interface RemoteRunner {
  /** Sends the next message of a claimed row to the remote, records its answer, and parks the row. Errors: storage's (the loop backs off). */
  run(claim: Claim, agent: AgentContext): Promise<void>;
}

/** How long a remote agent's card is kept before it is read again. */
const cardTtlMs = 10 * 60_000;

/** A2A states after which our message's answer is all there (the task asks, or it is over). */
const settledStates = new Set<TaskState>(['input-required', 'completed', 'failed', 'canceled', 'rejected']);

/**
 * The text of A2A parts as a digest reads them (a message without an id is known by it, and an
 * empty one posts nothing): text as it is, data as a JSON block, files named. What is posted is
 * remote-files.ts `readRemoteParts`' text.
 */
export function partsText(parts: readonly A2aPart[]): string {
  return parts
    .map((part) => {
      const content = part.content;
      if (content?.$case === 'text') return content.value;
      if (content?.$case === 'data') return `\`\`\`json\n${JSON.stringify(content.value, null, 2)}\n\`\`\``;
      if (content?.$case === 'url') return `[file: ${part.filename || content.value}]`;
      if (content?.$case === 'raw') return `[file: ${part.filename || 'attachment'} (${part.mediaType || 'application/octet-stream'}), not kept]`;
      return '';
    })
    .filter((text) => text !== '')
    .join('\n\n');
}

/** The attachment ids of the files read parts keep (a message's attachments). */
const fileIds = (read: Pick<ReadParts, 'files'>): string[] => read.files.map((file) => file.attachmentId);

/** A key for a remote message: its id, or (none given) a digest of what it says. */
function messageKey(message: A2aMessage, fallback: string): string {
  return message.messageId ? `msg:${message.messageId}` : `${fallback}:${createHash('sha256').update(partsText(message.parts)).digest('hex').slice(0, 32)}`;
}

/** The answer of one exchange so far: the remote's task, its artifacts as they grew, and whether it settled. */
class Exchange {
  taskId: string | undefined;
  contextId = '';
  readonly artifacts = new Map<string, { name: string; parts: A2aPart[] }>();
  settled = false;
  /**
   * Set while the first event of a stream that answers the remote's question is awaited: that
   * event is the task as it stood (still `input-required`), not a new question.
   */
  answering = false;

  readonly incoming: { id: string };

  /**
   * Reads the remote's parts as they are kept (remote-files.ts: files fetched under the exchange's
   * signal, within `budget`); set before the exchange begins.
   */
  read!: (parts: readonly A2aPart[], budget: FileBudget) => Promise<ReadParts>;

  /** The bounds on files; set before the exchange begins. */
  limits: FileLimits = defaultFileLimits;

  /** The files' budget of the step (event) being recorded: a new one per event ({@link follow}). */
  budget: FileBudget | undefined;

  /** Keeps an artifact of the answer: a new one past the {@link maxTaskArtifacts} a task keeps is dropped (never held in memory). */
  keepArtifact(id: string, artifact: { name: string; parts: A2aPart[] }): void {
    if (this.artifacts.has(id) || this.artifacts.size < maxTaskArtifacts) this.artifacts.set(id, artifact);
  }

  /** Reads parts within the current step's budget (one is started when none is). */
  readParts(parts: readonly A2aPart[]): Promise<ReadParts> {
    this.budget ??= fileBudget(this.limits);
    return this.read(parts, this.budget);
  }

  /** The reply's deltas (remote-deltas.ts: its id fixed, the streamed artifact's chunks written); set before the exchange begins. */
  reply!: RemoteReplyStream;

  /** `expected`: the remote task our message continues (an answer to its question), if any. */
  constructor(incoming: { id: string }, expected: string | undefined) {
    this.incoming = incoming;
    this.taskId = expected;
  }

  /** Checks that an event is about the exchange's task (the first names it). Errors: {@link RemoteNonsense}. */
  same(taskId: string, contextId: string): void {
    if (!taskId) throw new RemoteNonsense('the remote answered with an event that names no task');
    if (this.taskId !== undefined && this.taskId !== taskId) {
      throw new RemoteNonsense(`the remote answered about task ${JSON.stringify(taskId.slice(0, 100))}, not the task ${JSON.stringify(this.taskId.slice(0, 100))} it was asked about`);
    }
    this.taskId = taskId;
    if (contextId) this.contextId = contextId;
  }

  /** The artifacts as the task keeps them, their files to store, and their text (blocks of the artifacts that have text). */
  async artifactList(): Promise<{ artifacts: RemoteArtifact[]; files: PendingFile[]; text: string }> {
    const artifacts: RemoteArtifact[] = [];
    const files: PendingFile[] = [];
    const texts: string[] = [];
    let seen = 0;
    for (const [id, artifact] of this.artifacts) {
      // No more artifacts are read (nor their files fetched) than a task keeps.
      if (seen++ >= maxTaskArtifacts) break;
      const read = await this.readParts(artifact.parts);
      if (read.parts.length === 0) continue;
      // The streamed artifact is kept under the reply's id: A2A streams of our own server sent its
      // chunks under that id (reply-deltas.ts), and the whole artifact replaces them.
      const fixed = id === this.reply.streamedArtifact ? this.reply.replyId : undefined;
      artifacts.push({ key: `artifact:${this.taskId}:${id}`, id: fixed, name: artifact.name || null, parts: read.parts });
      files.push(...read.files);
      if (read.text !== '') texts.push(read.text);
    }
    return { artifacts, files, text: texts.join('\n\n') };
  }
}

/**
 * Creates the runner over the loop's options. Output: {@link RemoteRunner}.
 */
export function createRemoteA2aRunner(options: RemoteRunnerOptions): RemoteRunner {
  const { deps, log } = options;
  const db = deps.db;
  const policy = deps.urls ?? { allowPrivate: false };
  const cards = new Map<string, { url: string; sealed: string | null; card: RemoteCard; at: number }>();

  const park = (claim: Claim, due: Due, changes: { handledSeq?: number; failures?: number } = {}) => parkRow(db, claim, due, changes);

  /** The remote's card, from the cache when fresh for the same URL and headers. */
  async function cardOf(agentId: string, agent: AgentContext, remote: RemoteAgent, signal: AbortSignal): Promise<RemoteCard> {
    const cached = cards.get(agentId);
    if (cached && cached.url === remote.url && cached.sealed === agent.a2a_secrets && Date.now() - cached.at < cardTtlMs) return cached.card;
    const card = await fetchRemoteCard(remote, policy, signal);
    cards.set(agentId, { url: remote.url, sealed: agent.a2a_secrets, card, at: Date.now() });
    return card;
  }

  /** Records an outcome in a transaction of its own and announces it. */
  async function record(orgId: string, outcome: Outcome): Promise<void> {
    await db.transaction((tx) => recordOutcome(tx, outcome));
    deps.events.announce(orgId);
  }

  /**
   * Records one event of the remote's answer (a task, a status or artifact update, a message).
   * Output: none; `exchange.settled` says when our message's answer is all recorded.
   * Errors: {@link RemoteNonsense} (an event of another task, a state A2A has no such answer in).
   */
  async function onEvent(claim: Claim, agent: AgentContext, exchange: Exchange, event: StreamResponse): Promise<void> {
    const payload = event.payload;
    if (!payload) throw new RemoteNonsense('the remote answered an event with nothing in it');
    if (payload.$case !== 'task') exchange.answering = false;
    const base = { agentId: claim.agent_id, threadId: claim.thread_id };
    switch (payload.$case) {
      case 'message': {
        const message = payload.value;
        if (exchange.taskId !== undefined && message.taskId && message.taskId !== exchange.taskId) exchange.same(message.taskId, message.contextId);
        if (exchange.taskId === undefined || !message.taskId) {
          // A direct answer (no task): it is the reply, and it completes our task with it as the artifact.
          const read = await exchange.readParts(message.parts);
          const key = messageKey(message, `reply:${exchange.incoming.id}`);
          await exchange.reply.settle(read.text);
          await record(agent.org_id, {
            ...base,
            messages: [{ key, id: exchange.reply.replyId, content: read.text, replyTo: exchange.incoming.id, attachments: fileIds(read) }],
            artifacts: read.parts.length === 0 ? [] : [{ key: `reply-artifact:${key}`, name: null, parts: read.parts }],
            files: read.files,
            state: 'completed',
            statusKey: key,
            exchange: { remoteState: null, settled: true },
          });
          exchange.settled = true;
          return;
        }
        const read = await exchange.readParts(message.parts);
        await record(agent.org_id, { ...base, messages: [{ key: messageKey(message, `msg:${exchange.taskId}`), content: read.text, attachments: fileIds(read) }], artifacts: [], files: read.files });
        return;
      }
      case 'task': {
        const task: A2aTask = payload.value;
        exchange.same(task.id, task.contextId);
        for (const artifact of task.artifacts) exchange.keepArtifact(artifact.artifactId, { name: artifact.name, parts: [...artifact.parts] });
        const stale = exchange.answering && task.status?.state === A2aState.TASK_STATE_INPUT_REQUIRED;
        exchange.answering = false;
        if (stale) return;
        await noteRemoteTask(db, claim.agent_id, claim.thread_id, { id: task.id, contextId: task.contextId, state: task.status ? (fromA2aState(task.status.state) ?? null) : null });
        if (task.status) await onStatus(claim, agent, exchange, task.status.state, task.status.message);
        return;
      }
      case 'statusUpdate': {
        const update = payload.value;
        exchange.same(update.taskId, update.contextId);
        if (!update.status) throw new RemoteNonsense('the remote answered a status update without a status');
        await onStatus(claim, agent, exchange, update.status.state, update.status.message);
        return;
      }
      case 'artifactUpdate': {
        const update = payload.value;
        exchange.same(update.taskId, update.contextId);
        const artifact = update.artifact;
        if (!artifact) throw new RemoteNonsense('the remote answered an artifact update without an artifact');
        const known = exchange.artifacts.get(artifact.artifactId);
        // Its chunks are the reply as it is written (remote-deltas.ts), before they are kept.
        await exchange.reply.artifactUpdate(artifact.artifactId, { append: update.append, lastChunk: update.lastChunk, parts: artifact.parts }, known?.parts);
        if (update.append && known) appendParts(known.parts, artifact.parts);
        else exchange.keepArtifact(artifact.artifactId, { name: artifact.name, parts: [...artifact.parts] });
        return;
      }
    }
  }

  /** Records a state of the remote's task and the message that came with it (see the module's comment). */
  async function onStatus(claim: Claim, agent: AgentContext, exchange: Exchange, a2aState: A2aState, message: A2aMessage | undefined): Promise<void> {
    const base = { agentId: claim.agent_id, threadId: claim.thread_id };
    if (a2aState === A2aState.TASK_STATE_AUTH_REQUIRED) throw new RemoteNonsense('the remote asks for authentication (auth-required), which acs-server cannot give it');
    const state = fromA2aState(a2aState);
    if (state === undefined) throw new RemoteNonsense(`the remote answered a task in no known state (${String(a2aState)})`);
    const taskId = exchange.taskId!;
    if (state === 'submitted' || state === 'working') {
      const read = message && partsText(message.parts) !== '' ? await exchange.readParts(message.parts) : undefined;
      const messages: RemoteMessage[] = read && message ? [{ key: messageKey(message, `status:${taskId}:${state}`), content: read.text, attachments: fileIds(read) }] : [];
      if (messages.length > 0) await record(agent.org_id, { ...base, messages, artifacts: [], files: read?.files, state: 'working', statusKey: messages[0]!.key, exchange: { remoteState: state, settled: false } });
      return;
    }
    const read = message ? await exchange.readParts(message.parts) : { parts: [], text: '', files: [] };
    const text = read.text;
    const { artifacts, files: artifactFiles, text: artifactText } = await exchange.artifactList();
    // The message that settles carries its own files and the artifacts' (the thread shows them all).
    const attachments = [...fileIds(read), ...artifactFiles.map((file) => file.attachmentId)];
    let reply: RemoteMessage;
    if (state === 'input-required') {
      // The question answers our message as a final answer would (`reply_to`: an agent that asked
      // with `ask` gets it as the answer, §11); it expects the requester's reply.
      const key = message ? messageKey(message, `input:${taskId}:${exchange.incoming.id}`) : `input:${taskId}:${exchange.incoming.id}`;
      reply = { key, content: text || 'The remote agent needs more input to go on.', expectsReply: true, replyTo: exchange.incoming.id, attachments };
    } else if (text !== '') {
      reply = { key: messageKey(message!, `final:${taskId}`), content: text, replyTo: exchange.incoming.id, attachments };
    } else {
      reply = { key: `final:${taskId}`, content: state === 'completed' ? artifactText || 'Done.' : `The remote agent ended the task: ${state}.`, replyTo: exchange.incoming.id, attachments };
    }
    // The message that replies to ours has the id its deltas named (remote-deltas.ts).
    reply.id = exchange.reply.replyId;
    await exchange.reply.settle(reply.content);
    await record(agent.org_id, { ...base, messages: [reply], artifacts, files: [...read.files, ...artifactFiles], state, statusKey: reply.key, exchange: { remoteState: state, settled: true } });
    exchange.settled = true;
  }

  /** Runs the events of one answer through {@link onEvent} until it settles or ends. */
  async function follow(claim: Claim, agent: AgentContext, exchange: Exchange, events: AsyncIterable<StreamResponse> | Iterable<StreamResponse>): Promise<void> {
    for await (const event of events) {
      // Each event (step) has its own budget of time and bytes for files (remote-files.ts).
      exchange.budget = undefined;
      await onEvent(claim, agent, exchange, event);
      if (exchange.settled) return;
    }
  }

  /**
   * Sends our message (`content`, and the bytes of its attachments as file parts: the remote
   * cannot read our attachment URLs without a key of ours) to the remote and follows its answer.
   */
  async function send(
    client: Client,
    card: RemoteCard,
    claim: Claim,
    agent: AgentContext,
    exchange: Exchange,
    incoming: { content: string; attachments: readonly string[] },
    contextId: string,
    signal: AbortSignal,
  ): Promise<void> {
    const message: A2aMessage = {
      messageId: exchange.incoming.id,
      contextId,
      taskId: exchange.taskId ?? '',
      role: Role.ROLE_USER,
      parts: [toA2aPart({ text: incoming.content }, ''), ...(await attachmentParts(db, agent.org_id, incoming.attachments, exchange.limits.messageBytes))],
      metadata: { thread_id: claim.thread_id },
      extensions: [],
      referenceTaskIds: [],
    };
    const request = { tenant: '', message, configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: false }, metadata: undefined };
    if (card.summary.streaming) {
      exchange.answering = exchange.taskId !== undefined;
      return follow(claim, agent, exchange, client.sendMessageStream(request, { signal }));
    }
    const result = await client.sendMessage(request, { signal });
    const event: StreamResponse = 'status' in result ? { payload: { $case: 'task', value: result } } : { payload: { $case: 'message', value: result } };
    return follow(claim, agent, exchange, [event]);
  }

  /**
   * Asks the remote about the task it was working on for our message (a process that took over,
   * an answer cut off). Output: true when the answer was followed (settled or not), false when the
   * remote no longer knows the task (it restarted): the message is to be sent again.
   */
  async function resume(client: Client, card: RemoteCard, claim: Claim, agent: AgentContext, exchange: Exchange, signal: AbortSignal): Promise<boolean> {
    let task: A2aTask;
    try {
      task = await client.getTask({ tenant: '', id: exchange.taskId!, historyLength: 0 }, { signal });
    } catch (error) {
      if (error instanceof TaskNotFoundError) return false;
      throw error;
    }
    await follow(claim, agent, exchange, [{ payload: { $case: 'task', value: task } } satisfies StreamResponse]);
    if (!exchange.settled && card.summary.streaming) await follow(claim, agent, exchange, client.resubscribeTask({ tenant: '', id: task.id }, { signal }));
    return true;
  }

  /**
   * Ends the work of a row whose task was canceled (§12, remote-cancel.ts): a remote task still
   * followed (`remoteTaskId`) is sent `CancelTask`; a remote that cannot be reached is retried as
   * its other calls are (the row parked with backoff; the next claim tries again), at most
   * `maxCancelAttempts` times. Then the row is parked past the thread's messages: the thread of a
   * canceled task sends the remote nothing more.
   */
  async function endCanceled(claim: Claim, agent: AgentContext, remoteTaskId: string | undefined): Promise<void> {
    if (remoteTaskId !== undefined) {
      const signal = AbortSignal.any([options.stopping, AbortSignal.timeout(options.callTimeoutMs)]);
      const assignee = { agentId: claim.agent_id, threadId: claim.thread_id, orgId: agent.org_id, name: agent.name, a2a: agent.a2a, a2aSecrets: agent.a2a_secrets };
      const outcome = await sendRemoteCancel(deps, log, assignee, remoteTaskId, signal);
      if (options.stopping.aborted) return park(claim, { inMs: 0 });
      if (outcome === 'unavailable' && claim.failures + 1 < maxCancelAttempts) {
        const failures = claim.failures + 1;
        return park(claim, { inMs: options.backoffMs(failures) }, { failures });
      }
    }
    return park(claim, { inMs: 0 }, { handledSeq: claim.latest_seq, failures: 0 });
  }

  async function run(claim: Claim, agent: AgentContext): Promise<void> {
    const a2a = a2aResource(agent.a2a)!;
    if (agent.status !== 'active') return park(claim, 'never');
    // The thread's task, when assigned to the agent (§12). Canceled: the remote's task is canceled
    // too, and nothing more is sent (read after the claim: a later cancel is watched for below).
    const task = await taskAssignedOnThread(db, claim.thread_id, claim.agent_id);
    if (task?.state === 'canceled') return endCanceled(claim, agent, liveRemoteTask(await readExchange(db, claim.agent_id, claim.thread_id)));
    // The oldest message of the other participant not answered yet: a message the remote's question
    // or final answer replies to is answered (a process that died before it parked the row).
    const next = await db.query<{ id: string; seq: number; content: string; attachments: string[] }>(
      `SELECT m.id, m.seq, m.content, m.attachments FROM messages m WHERE m.thread_id = $1 AND m.seq > $2 AND m.sender_id <> $3
          AND NOT EXISTS (SELECT 1 FROM messages r WHERE r.sender_id = $3 AND r.reply_to = m.id)
        ORDER BY m.seq LIMIT 1`,
      [claim.thread_id, claim.handled_seq, claim.agent_id],
    );
    const incoming = next[0];
    if (!incoming) return park(claim, { inMs: 0 }, { handledSeq: claim.latest_seq });
    // The ping-pong guard (agent-loop.ts `autoReplyLimit`): a message that ends a run of automatic
    // replies is not sent to the remote, until someone writes by hand.
    if (endsAutoReplyRun(await recentMessages(db, claim.thread_id, incoming.seq, options.autoReplyLimit), options.autoReplyLimit)) {
      return park(claim, { inMs: 0 }, { handledSeq: incoming.seq });
    }
    const where = { agent_id: claim.agent_id, thread_id: claim.thread_id, org_id: agent.org_id, agent: agent.name };
    let headers: Record<string, string>;
    try {
      headers = openA2aSecrets(deps.secrets, agent.a2a_secrets);
    } catch {
      log.error(where, "the header values of the remote A2A agent cannot be decrypted with this process's encryption key (ACS_ENCRYPTION_KEY); set its a2a headers again");
      return park(claim, { inMs: options.backoffMs(claim.failures + 1) }, { failures: claim.failures + 1 });
    }
    const remote: RemoteAgent = { url: a2a.url, headers };
    const before = await readExchange(db, claim.agent_id, claim.thread_id);
    // An answer to the remote's question continues its task; anything else starts a new one.
    const continuing = before?.remote_state === 'input-required' && before.remote_task_id !== null ? before.remote_task_id : undefined;
    const resuming = before?.message_id === incoming.id && before.remote_task_id !== null && !settledStates.has(before.remote_state as TaskState);
    const exchange = new Exchange(incoming, resuming ? before.remote_task_id! : continuing);
    const timeout = AbortSignal.timeout(options.callTimeoutMs);
    // The task canceled from now on (domain/tasks.ts signals the thread's stop key; looked at now
    // and every few seconds besides): the request or stream is cut, and the remote is followed no more.
    const canceled = watchStop(deps.events, claim.thread_id, async () => (await taskAssignedOnThread(db, claim.thread_id, claim.agent_id))?.state === 'canceled');
    const signal = AbortSignal.any([options.stopping, timeout, canceled.signal]);
    // The remote's files are fetched and read under the exchange's signal (remote-files.ts).
    exchange.read = (parts, budget) => readRemoteParts(parts, { remote, policy, signal, budget });
    exchange.limits = options.fileLimits ?? defaultFileLimits;
    try {
      // Submitted, or asking until this answer: the remote works on it now.
      if (task) await startTaskWork(deps, claim.thread_id, claim.agent_id);
      // The reply's id is fixed before the first delta; an attempt after one that wrote text of it says it restarted.
      exchange.reply = await RemoteReplyStream.open({ db, hub: deps.events, threadId: claim.thread_id, senderId: claim.agent_id, incomingId: incoming.id }, (error) =>
        log.warn({ ...where, reason: (error as Error).message }, 'remote A2A agent: a delta of its reply could not be written'),
      );
      const card = await cardOf(claim.agent_id, agent, remote, signal);
      const client = await remoteClient(card.card, remote, policy, signal);
      const resumed = resuming ? await resume(client, card, claim, agent, exchange, signal) : false;
      if (!resumed) {
        if (resuming) exchange.taskId = undefined;
        await noteSending(db, claim.agent_id, claim.thread_id, incoming.id, exchange.taskId === undefined);
        await send(client, card, claim, agent, exchange, incoming, before?.remote_context_id ?? claim.thread_id, signal);
      }
      if (!exchange.settled) throw new RemoteUnavailable('the remote ended its answer before the task asked for input or ended; it is asked again');
      return park(claim, { inMs: 0 }, { handledSeq: incoming.seq, failures: 0 });
    } catch (error) {
      // The text held is written now, not after the row is parked (a next attempt finds it there).
      await exchange.reply?.flush();
      if (options.stopping.aborted) return park(claim, { inMs: 0 });
      if (canceled.signal.aborted) {
        // The task was canceled mid-exchange: the remote's task (as this exchange knows it, noted
        // for a retry) is sent CancelTask.
        if (exchange.taskId !== undefined) await noteRemoteTask(db, claim.agent_id, claim.thread_id, { id: exchange.taskId, contextId: exchange.contextId, state: null });
        return endCanceled(claim, agent, exchange.taskId);
      }
      const reason = timeout.aborted ? `no answer within ${options.callTimeoutMs} ms` : remoteErrorText(error, remote);
      if (timeout.aborted || isTransient(error)) {
        cards.delete(claim.agent_id);
        const failures = claim.failures + 1;
        const delay = options.backoffMs(failures);
        log.warn({ ...where, failures, retry_in_ms: delay, reason }, 'remote A2A agent unavailable: retried with backoff (its task stays working)');
        return park(claim, { inMs: delay }, { failures });
      }
      // Our own storage failing (a database error, the thread deleted meanwhile) is not the remote's
      // doing: the loop backs off and tries again.
      if ((error instanceof ServiceError && !isUrlRefusal(error)) || (typeof error === 'object' && error !== null && 'severity' in error)) throw error;
      // The remote answered what A2A does not allow: the task fails with the reason, the message counts as answered.
      cards.delete(claim.agent_id);
      log.warn({ ...where, reason }, 'remote A2A agent answered what cannot be read: its task failed');
      const key = `failed:${exchange.taskId ?? 'none'}:${incoming.id}`;
      const content = `The remote A2A agent at ${a2a.url} could not be followed: ${reason}`;
      // The failure replies to our message: it ends the reply whose deltas may have been written.
      const replyId = exchange.reply?.replyId;
      await exchange.reply?.settle(content);
      await record(agent.org_id, {
        agentId: claim.agent_id,
        threadId: claim.thread_id,
        messages: [{ key, id: replyId, content, replyTo: incoming.id }],
        artifacts: [],
        state: 'failed',
        statusKey: key,
        exchange: { remoteState: 'failed', settled: true },
      });
      return park(claim, { inMs: 0 }, { handledSeq: incoming.seq, failures: 0 });
    } finally {
      canceled.dispose();
    }
  }

  return { run };
}
