/**
 * Approvals (contract §11): before an agent calls a tool its `approval.tools` name, the turn asks
 * the human `approval.by` — in a new thread on their edge with the agent, showing the tool and its
 * arguments — for a typed reply `{decision: approve|reject, comment?}`, and waits as `ask` does. A
 * person need not write JSON: `approve`, `yes`, `reject: wrong project` are read as the same reply.
 */
import { ApprovalReply } from '../../api/agent-tools.ts';
import type { Queryable } from '../storage/db.ts';

/** How many answers an approval takes before it counts as rejected (the first and two re-asks). */
export const maxApprovalAttempts = 3;

/** The human who approves and the edge the question goes on. */
export interface Approver {
  humanId: string;
  name: string;
  edgeId: string;
  teamId: string;
}

/**
 * Finds the approver `by` (a human's name in the agent's team) and their edge with the agent.
 * Output: the {@link Approver}, or a reason why there is none (`no human named …`, `… shares no edge
 * with …`), which the turn records as `approval_unavailable`.
 */
export async function findApprover(db: Queryable, agent: { agentId: string; teamId: string }, by: string): Promise<Approver | { unavailable: string }> {
  const rows = await db.query<{ id: string; edge_id: string | null }>(
    `SELECT h.id, e.id AS edge_id FROM participants h
       LEFT JOIN edges e ON (e.participant_a = h.id AND e.participant_b = $3) OR (e.participant_b = h.id AND e.participant_a = $3)
      WHERE h.team_id = $1 AND h.kind = 'human' AND h.name = $2`,
    [agent.teamId, by, agent.agentId],
  );
  const row = rows[0];
  if (!row) return { unavailable: `no human named ${JSON.stringify(by)} in the team to approve it` };
  if (row.edge_id === null) return { unavailable: `${by} shares no edge with this agent, so cannot be asked to approve` };
  return { humanId: row.id, name: by, edgeId: row.edge_id, teamId: agent.teamId };
}

/** The question an approver reads: who asks to call what, with which arguments, and how to answer. */
export function approvalQuestion(agentName: string, toolLabel: string, args: unknown): string {
  const json = JSON.stringify(args, null, 2);
  const shown = json.length > 8000 ? `${json.slice(0, 8000)}\n… (cut: ${json.length} characters in all)` : json;
  return [
    `${agentName} asks for your approval to call ${toolLabel} with:`,
    '```json',
    shown,
    '```',
    'Reply approve, or reject with a reason (for example: reject: not this project).',
  ].join('\n');
}

/** What an approver's answer says: a decision, or why it could not be read. */
export type ApprovalDecision = { ok: true; reply: ApprovalReply } | { ok: false; problem: string };

const approveWords = /^(approve|approved|yes|ok|okay|lgtm)\b[\s:,.!-]*/i;
const rejectWords = /^(reject|rejected|no|deny|denied)\b[\s:,.!-]*/i;

/**
 * Reads an approver's answer: the typed reply as JSON (alone or in a ```json block), or a word
 * (`approve`, `yes`, `ok`, `lgtm` / `reject`, `no`, `deny`) with an optional comment after it.
 * Output: {@link ApprovalDecision}. Raises nothing.
 */
export function parseApproval(text: string): ApprovalDecision {
  const trimmed = text.trim();
  const fenced = /```json[^\S\r\n]*\r?\n([\s\S]*?)```/i.exec(trimmed)?.[1];
  for (const candidate of [trimmed, fenced]) {
    if (candidate === undefined) continue;
    try {
      const parsed = ApprovalReply.safeParse(JSON.parse(candidate));
      if (parsed.success) return { ok: true, reply: parsed.data };
    } catch {
      // not JSON: read as words below
    }
  }
  for (const [words, decision] of [
    [approveWords, 'approve'],
    [rejectWords, 'reject'],
  ] as const) {
    const match = words.exec(trimmed);
    if (match) {
      const comment = trimmed.slice(match[0].length).trim();
      return { ok: true, reply: { decision, ...(comment ? { comment: comment.slice(0, 4000) } : {}) } };
    }
  }
  return { ok: false, problem: 'the answer is neither approve nor reject' };
}

/** The follow-up when an answer could not be read (`attempt`: the number of the answer asked for now). */
export function approvalReask(attempt: number): string {
  return `Please answer approve, or reject with a reason (for example: reject: not this project). (Answer ${attempt} of ${maxApprovalAttempts}.)`;
}
