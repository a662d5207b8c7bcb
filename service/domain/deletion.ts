import { ServiceError } from '../../errors/catalogue.ts';
import type { ProtectableKind, ProtectedResource, TeamDeletionPreview } from '../../api/schemas.ts';
import type { Queryable } from '../storage/db.ts';
import { countTeamAttachments } from './attachments.ts';

// What deletions share (contract §4 `deletion_protection`, §5 DELETE and deletion previews): the
// counts of what a team or organization deletion takes along, and the protection check, with the
// row locks that make it hold against concurrent writers. teams.ts and organizations.ts build
// their previews and deletions on these, so the two cannot count or check differently.

/** A resource to delete: its kind and id. */
export interface DeletionRoot {
  kind: ProtectableKind;
  id: string;
}

/** The deletions that cascade to teams, and so to participants, edges, threads and messages. */
type CascadingKind = Extract<ProtectableKind, 'team' | 'organization'>;

/** The counts both deletion previews share (declared once, in api/schemas.ts). */
export type CascadeCounts = Omit<TeamDeletionPreview, 'team_id' | 'protected'>;

const tableOf: Record<ProtectableKind, string> = { organization: 'organizations', team: 'teams', agent: 'participants', human: 'participants' };

// The teams a cascading deletion removes, as a sub-select over $1.
const doomedTeams: Record<CascadingKind, string> = {
  team: `SELECT id FROM teams WHERE id = $1`,
  organization: `SELECT id FROM teams WHERE org_id = $1`,
};

/**
 * Counts what deleting the team or organization `id` would remove from its teams: agents,
 * humans, edges, threads, messages, and attachments (a team's: those its messages name that no
 * other team's message names; an organization's: all of them). No access check: callers did it.
 */
export async function countCascade(db: Queryable, kind: CascadingKind, id: string): Promise<CascadeCounts> {
  const teams = doomedTeams[kind];
  const rows = await db.query<Omit<CascadeCounts, 'attachments'>>(
    `SELECT
      (SELECT count(*)::int FROM participants WHERE team_id IN (${teams}) AND kind = 'agent') AS agents,
      (SELECT count(*)::int FROM participants WHERE team_id IN (${teams}) AND kind = 'human') AS humans,
      (SELECT count(*)::int FROM edges WHERE team_id IN (${teams})) AS edges,
      (SELECT count(*)::int FROM threads WHERE team_id IN (${teams})) AS threads,
      (SELECT count(*)::int FROM messages m JOIN threads th ON th.id = m.thread_id WHERE th.team_id IN (${teams})) AS messages`,
    [id],
  );
  const attachments =
    kind === 'team'
      ? await countTeamAttachments(db, id)
      : ((await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM attachments WHERE org_id = $1`, [id]))[0]?.n ?? 0);
  return { ...rows[0]!, attachments };
}

/**
 * The resources with `deletion_protection` that deleting `root` would remove: the root itself,
 * then (for a team or an organization) the organization's teams and the participants of the
 * doomed teams, oldest first. Undefined when the root does not exist.
 *
 * With `lock`, for a deletion's transaction: every row whose flag decides the answer is locked
 * (FOR UPDATE) before the flags are read, in the order other writers take them (organization,
 * teams, participants; see service/README.md), so a concurrent PATCH that sets a flag either
 * committed first and is seen here, or waits until the deletion ends and then finds its row gone.
 * Without `lock` (previews), a plain read.
 */
export async function protectedResources(db: Queryable, root: DeletionRoot, lock: boolean): Promise<ProtectedResource[] | undefined> {
  const forUpdate = lock ? ' FOR UPDATE' : '';
  const participant = root.kind === 'agent' || root.kind === 'human';
  const rootRows = await db.query<{ id: string; name: string; deletion_protection: boolean }>(
    `SELECT id, name, deletion_protection FROM ${tableOf[root.kind]} WHERE id = $1${participant ? ' AND kind = $2' : ''}${forUpdate}`,
    participant ? [root.id, root.kind] : [root.id],
  );
  const found = rootRows[0];
  if (found === undefined) return undefined;
  const result: ProtectedResource[] = found.deletion_protection ? [{ kind: root.kind, id: found.id, name: found.name }] : [];
  const kind = root.kind;
  if (kind === 'agent' || kind === 'human') return result;

  const teams = doomedTeams[kind];
  if (lock) {
    // count(*) over a locking sub-select: every row is locked, none is sent back.
    if (kind === 'organization') await db.query(`SELECT count(*) FROM (SELECT 1 FROM teams WHERE org_id = $1 FOR UPDATE) t`, [root.id]);
    await db.query(`SELECT count(*) FROM (SELECT 1 FROM participants WHERE team_id IN (${teams}) FOR UPDATE) p`, [root.id]);
  }
  if (kind === 'organization') {
    const protectedTeams = await db.query<{ id: string; name: string }>(
      `SELECT id, name FROM teams WHERE org_id = $1 AND deletion_protection ORDER BY created_at, id`,
      [root.id],
    );
    result.push(...protectedTeams.map((t) => ({ kind: 'team' as const, id: t.id, name: t.name })));
  }
  const participants = await db.query<{ id: string; kind: 'agent' | 'human'; name: string }>(
    `SELECT p.id, p.kind, p.name FROM participants p JOIN teams t ON t.id = p.team_id
      WHERE p.team_id IN (${teams}) AND p.deletion_protection ORDER BY t.created_at, t.id, p.created_at, p.id`,
    [root.id],
  );
  result.push(...participants.map((p) => ({ kind: p.kind, id: p.id, name: p.name })));
  return result;
}

/**
 * In a deletion's transaction: locks what decides whether `root` may be deleted (see
 * {@link protectedResources}) and refuses when anything protected would go.
 * Errors: `not_found` when the root is gone (deleted meanwhile); `deletion_protected` naming the
 * first protected resource in `detail` and all of them in the problem's `protected` member.
 */
export async function lockDeletable(tx: Queryable, root: DeletionRoot): Promise<void> {
  const found = await protectedResources(tx, root, true);
  if (found === undefined) throw new ServiceError('not_found', `${root.kind} not found`);
  const first = found[0];
  if (first === undefined) return;
  const more = found.length > 1 ? ` and ${found.length - 1} more protected resource${found.length > 2 ? 's' : ''} (listed in protected)` : '';
  const detail =
    first.id === root.id
      ? `${first.kind} "${first.name}" has deletion protection${more}; set deletion_protection to false before deleting it`
      : `deleting this ${root.kind} would delete ${first.kind} "${first.name}" (${first.id}), which has deletion protection${more}; set its deletion_protection to false first`;
  throw new ServiceError('deletion_protected', detail, { extra: { protected: found } });
}
