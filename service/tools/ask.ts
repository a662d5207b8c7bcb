/**
 * `ask` (contract §11): a provider agent writes to a participant on one of its edges — a new thread,
 * or one it names — and its turn waits, holding nothing, until that participant answers; the answer
 * (checked against `reply_schema`, as pipelines check typed replies) is the tool's result. An agent
 * asked answers with its own turn (delegation: chains work, each link on an edge); a remote A2A
 * agent (§12) with its task's answer, or with a question back (`input-required`: the result says
 * `expects_reply: true`), which the asker answers with `ask` in the result's `thread_id` — the
 * remote's task goes on; a person answers
 * in the console or with `teamctl thread`. Edges are the permission: a peer, edge or thread the
 * agent has none to is refused as not found, worded as for an id that does not exist.
 */
import { z } from 'zod';
import { Content, Id, Name, Subject } from '../../api/schemas.ts';
import { checkReply, compileReplySchema, reaskMessage, stringOnly } from '../../definitions/reply-schema.ts';
import { ServiceError } from '../../errors/catalogue.ts';
import type { AgentIdentity } from '../domain/agent-inbox.ts';
import { insertMessage, insertThread } from '../domain/threads.ts';
import type { Queryable } from '../storage/db.ts';

/** How many answers an ask with a `reply_schema` takes before it fails (the first and two re-asks, as pipelines' default). */
export const maxAskAttempts = 3;

/** `ask`'s arguments: whom (a peer's name, an edge, or a thread), what, and how the answer must look. */
export const AskArgs = z
  .strictObject({
    peer: Name.optional().describe('Whom to ask, by name: a participant you share an edge with (see list_edges).'),
    edge_id: Id.optional().describe('Or the edge to ask on (one of yours).'),
    thread_id: Id.optional().describe('Ask in this thread (one on your edges) instead of a new one.'),
    content: Content.describe('The question, or the work you hand over.'),
    subject: Subject.optional().describe('Subject of the new thread.'),
    reply_schema: z
      .record(z.string(), z.unknown())
      .optional()
      .describe('A JSON Schema (2020-12) the answer must fit; the answer is then parsed as JSON (or taken as text for a schema of strings) and re-asked when it does not fit.'),
  })
  .refine((args) => args.peer !== undefined || args.edge_id !== undefined || args.thread_id !== undefined, {
    message: 'name whom to ask: peer, edge_id or thread_id',
  });
export type AskArgs = z.infer<typeof AskArgs>;

/** What `ask` tells a model about itself. */
export const askDescription =
  'Ask a participant you share an edge with (an agent: it works on it with its own turn; a person: they answer when they can) and wait for the answer, ' +
  'which is this tool\'s result. Name them by peer (their name), edge_id or thread_id. With reply_schema the answer is checked against it. ' +
  'When the answer is a question back (expects_reply: true in the result), answer it with ask and the result\'s thread_id: the peer goes on with the same work. ' +
  'Your turn waits meanwhile; nobody off your edges can be reached.';

/** Whom an ask goes to: the edge, the peer and, when the ask names one, the thread. */
export interface AskTarget {
  edgeId: string;
  teamId: string;
  peerId: string;
  peerName: string;
  peerKind: 'agent' | 'human';
  threadId: string | null;
}

const onlyYourEdges = (what: string) => new ServiceError('not_found', `${what}: you share no edge with it (or it does not exist)`);

/**
 * Finds whom `args` names among the agent's edges (a thread on them, an edge of theirs, or the peer
 * of that name), checking that what is named together agrees. Output: {@link AskTarget}.
 * Errors: `not_found` (nothing of that id or name on the agent's edges), `invalid_request` (a
 * thread and a peer or edge that disagree).
 */
export async function resolveAskTarget(db: Queryable, agent: AgentIdentity, args: Pick<AskArgs, 'peer' | 'edge_id' | 'thread_id'>): Promise<AskTarget> {
  const rows = await db.query<{ edge_id: string; team_id: string; peer_id: string; peer_name: string; peer_kind: 'agent' | 'human'; thread_id: string | null }>(
    `SELECT e.id AS edge_id, e.team_id, p.id AS peer_id, p.name AS peer_name, p.kind AS peer_kind, th.id AS thread_id
       FROM edges e
       JOIN participants p ON p.id = CASE WHEN e.participant_a = $1::uuid THEN e.participant_b ELSE e.participant_a END
       LEFT JOIN threads th ON th.edge_id = e.id AND th.id = $2::uuid
      WHERE $1::uuid IN (e.participant_a, e.participant_b)
        AND ($2::uuid IS NULL OR th.id IS NOT NULL)
        AND ($3::uuid IS NULL OR e.id = $3::uuid)
        AND ($4::text IS NULL OR p.name = $4::text)`,
    [agent.agentId, args.thread_id ?? null, args.edge_id ?? null, args.peer ?? null],
  );
  const row = rows[0];
  if (!row) {
    if (args.thread_id !== undefined && (args.peer !== undefined || args.edge_id !== undefined)) {
      // Either the thread is not the agent's, or it is on another edge than the one named.
      const thread = await db.query(`SELECT 1 FROM threads th JOIN edges e ON e.id = th.edge_id WHERE th.id = $1 AND $2::uuid IN (e.participant_a, e.participant_b)`, [
        args.thread_id,
        agent.agentId,
      ]);
      if (thread.length > 0) throw new ServiceError('invalid_request', 'thread_id is not on the edge of the peer or edge_id you named');
    }
    throw onlyYourEdges(args.thread_id !== undefined ? `thread ${args.thread_id}` : args.edge_id !== undefined ? `edge ${args.edge_id}` : `participant ${JSON.stringify(args.peer)}`);
  }
  return { edgeId: row.edge_id, teamId: row.team_id, peerId: row.peer_id, peerName: row.peer_name, peerKind: row.peer_kind, threadId: row.thread_id };
}

/**
 * The question as written: the model's text, and when the answer must fit a schema, how to answer
 * (the allowed strings, or the schema), so that a person or an agent knows. Errors: `invalid_request`
 * for a `reply_schema` that does not compile.
 */
export function questionText(content: string, replySchema: Record<string, unknown> | undefined): string {
  if (!replySchema) return content;
  const compiled = compileReplySchema(replySchema);
  if (!compiled.ok) throw new ServiceError('invalid_request', `reply_schema: ${compiled.message}`);
  const allowed = Array.isArray(replySchema['enum']) && replySchema['enum'].every((v) => typeof v === 'string') ? (replySchema['enum'] as string[]) : undefined;
  const how = allowed
    ? `Answer with one of: ${allowed.join(', ')}.`
    : stringOnly(replySchema)
      ? 'Answer with text.'
      : `Answer with JSON (alone, or in a \`\`\`json block) that fits this JSON Schema: ${JSON.stringify(replySchema)}`;
  return `${content}\n\n${how}`.slice(0, 32_768);
}

/** Where a question was written: the thread, the message, and its seq (an answer is the peer's first message after it). */
export interface WrittenQuestion {
  threadId: string;
  messageId: string;
  seq: number;
  orgId: string;
}

/**
 * Writes a question of the agent to `target` inside `tx`: in its thread, else in a new thread on
 * its edge, as a message that expects a reply (so the thread shows whose answer it awaits, and the
 * asking agent's loop leaves the answer to the turn that waits for it). Announce the organization
 * after the commit. Errors: `not_found` (the thread or edge went meanwhile).
 */
export async function writeQuestion(
  tx: Queryable,
  agent: AgentIdentity,
  target: AskTarget,
  question: { content: string; subject?: string | undefined },
): Promise<WrittenQuestion> {
  if (target.threadId !== null) {
    const message = await insertMessage(tx, target.threadId, agent.agentId, question.content, { expectsReply: true });
    return { threadId: target.threadId, messageId: message.id, seq: message.seq, orgId: message.org_id };
  }
  const { threadId, first } = await insertThread(tx, {
    edgeId: target.edgeId,
    teamId: target.teamId,
    senderId: agent.agentId,
    content: question.content,
    subject: question.subject,
    expects_reply: true,
  });
  return { threadId, messageId: first.id, seq: first.seq, orgId: first.org_id };
}

/** An answer found in the thread a question waits in. */
export interface FoundAnswer {
  id: string;
  seq: number;
  content: string;
  /** The writer waits for a reply (from a remote A2A agent: its question back, `input-required`, §12; see {@link judgeAnswer}). */
  expects_reply: boolean;
}

/** Who a question was asked of, as far as finding the answer goes. */
export interface AskedPeer {
  kind: string;
  /** The provider of an agent run by the service (§8, §11); null otherwise. */
  provider: string | null;
  /** Whether the peer is a remote A2A agent (§12, `a2a` set). */
  remote: boolean;
}

/**
 * The message an answer to the question `questionId` must reply to (`reply_to`), or undefined for
 * any next message of the peer: an agent the service runs — a provider agent's turn (§11:
 * delegation; what its tools write into the thread first is not the answer) or a remote A2A agent's
 * exchange (§12: its final answer or its question back replies to the message it answers; its
 * status messages before it are not the answer) — answers with a reply to it; a person or an
 * external agent with their next message. Raises nothing.
 */
export function answerReplyTo(peer: AskedPeer | undefined, questionId: string): string | undefined {
  return peer?.kind === 'agent' && (peer.provider !== null || peer.remote) ? questionId : undefined;
}

/**
 * The answer to a question: the first message of `participantId` in `threadId` after `afterSeq`,
 * or, with `replyTo` (the question, when the one asked is an agent that runs in the service), the
 * first that replies to it — its turn's reply, not a note its tools wrote into the thread before
 * it. Undefined while there is none. One index range.
 */
export async function findAnswer(
  db: Queryable,
  wait: { threadId: string; participantId: string; afterSeq: number; replyTo?: string | undefined },
): Promise<FoundAnswer | undefined> {
  const rows = await db.query<FoundAnswer>(
    `SELECT id, seq, content, expects_reply FROM messages WHERE thread_id = $1 AND seq > $2 AND sender_id = $3 AND ($4::uuid IS NULL OR reply_to = $4::uuid) ORDER BY seq LIMIT 1`,
    [wait.threadId, wait.afterSeq, wait.participantId, wait.replyTo ?? null],
  );
  return rows[0];
}

/** What an answer makes of an ask: its result, or a re-ask (what is wrong with it), or a failure when no attempt is left. */
export type AnswerOutcome =
  | { kind: 'result'; result: Record<string, unknown> }
  | { kind: 'reask'; message: string }
  | { kind: 'invalid'; problems: string[] };

/**
 * Judges an answer to an ask: without a schema it is the result as it is; with one, it must fit
 * (definitions/reply-schema.ts, as pipelines' typed replies), else it is asked again with what is
 * wrong, up to {@link maxAskAttempts} answers. The answer of a remote A2A agent (`peer.remote`)
 * that expects a reply is its question back (`input-required`, §12): the result as it is, with
 * `expects_reply: true`, whatever the schema — the asker answers it in the same thread, which
 * continues the remote's task (a re-ask would reach the remote as that answer). Anyone else's
 * message that expects a reply (an A2A caller's, which awaits the turn's reply) is an answer as
 * any. `attempt` is the number of this answer (1 for the first). Output: {@link AnswerOutcome};
 * a result is `{from, thread_id, message_id, content, value?, expects_reply?}`.
 */
export function judgeAnswer(
  answer: FoundAnswer,
  context: {
    from: { participant_id: string; name: string; kind: string };
    threadId: string;
    replySchema: Record<string, unknown> | undefined;
    attempt: number;
    /** Who was asked (a remote A2A agent's question back is told apart by it); default: not a remote agent. */
    peer?: AskedPeer | undefined;
  },
): AnswerOutcome {
  const result = { from: context.from, thread_id: context.threadId, message_id: answer.id, content: answer.content };
  if (answer.expects_reply && context.peer?.remote === true) return { kind: 'result', result: { ...result, expects_reply: true } };
  if (!context.replySchema) return { kind: 'result', result };
  const checked = checkReply(answer.content, context.replySchema);
  if (checked.ok) return { kind: 'result', result: { ...result, value: checked.value } };
  if (context.attempt >= maxAskAttempts) return { kind: 'invalid', problems: checked.problems };
  return { kind: 'reask', message: reaskMessage(checked.problems, context.replySchema, context.attempt + 1, maxAskAttempts) };
}
