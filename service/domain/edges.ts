import { ServiceError } from '../../errors/catalogue.ts';
import type { Edge } from '../../api/schemas.ts';
import type { Queryable } from '../storage/db.ts';
import { reaches, type Caller, type DomainDeps } from './caller.ts';
import { iso, isUuid, newId } from './ids.ts';
import { getTeam, lockTeamForChange } from './teams.ts';
import { appendEvent, insertWithEvent } from '../events/log.ts';

/** A stored edge. */
export interface EdgeRow {
  id: string;
  team_id: string;
  participant_a: string;
  participant_b: string;
  created_at: Date;
}

/** Maps a stored edge to its wire form (contract §4): participants in the order given at creation. */
export function toEdge(row: EdgeRow): Edge {
  return { edge_id: row.id, team_id: row.team_id, participants: [row.participant_a, row.participant_b], created_at: iso(row.created_at) };
}

/** Lists the edges of a team, oldest first (no access check: callers checked the team). */
export async function listEdgesOfTeam(db: Queryable, teamId: string): Promise<Edge[]> {
  const rows = await db.query<EdgeRow>(`SELECT * FROM edges WHERE team_id = $1 ORDER BY created_at, id`, [teamId]);
  return rows.map(toEdge);
}

/**
 * Returns the edge `edgeId` if the caller reaches its organization.
 * Errors: `not_found` otherwise.
 */
export async function getEdge(db: Queryable, caller: Caller, edgeId: string): Promise<Edge> {
  if (!isUuid(edgeId)) throw new ServiceError('not_found', 'edge not found');
  const rows = await db.query<EdgeRow>(
    `SELECT e.* FROM edges e JOIN teams t ON t.id = e.team_id JOIN organizations o ON o.id = t.org_id
      WHERE e.id = $2 AND ${reaches('o', 1)}`,
    [caller.orgId, edgeId],
  );
  if (!rows[0]) throw new ServiceError('not_found', 'edge not found');
  return toEdge(rows[0]);
}

/**
 * Joins two distinct participants of a team (contract §4), in the order given, and writes
 * `edge.created` (contract §9).
 * Errors: `not_found` (team), `invalid_request` (the same participant twice),
 * `unknown_reference` (a participant not in the team), `conflict` (the unordered pair already
 * has an edge; `existing_id` names it).
 */
export async function createEdge(deps: DomainDeps, caller: Caller, teamId: string, participants: [string, string]): Promise<Edge> {
  const [a, b] = participants;
  const created = await deps.db.transaction(async (tx) => {
    const { orgId, now } = await lockTeamForChange(tx, caller, teamId);
    if (a === b) {
      throw new ServiceError('invalid_request', 'participants must be two different ids', {
        errors: [{ path: 'participants.1', message: 'must differ from participants.0' }],
      });
    }
    const edge = toEdge({ id: newId(), team_id: teamId, participant_a: a, participant_b: b, created_at: now });
    // One statement in the common case: both participants in the team, the pair without an edge
    // (the unique index edges_pair), and the event. With the team held, no participant is deleted meanwhile.
    const inserted = await insertWithEvent<EdgeRow>(
      tx,
      `INSERT INTO edges (id, team_id, participant_a, participant_b)
       SELECT $1, $2, $3, $4 WHERE (SELECT count(*) FROM participants WHERE team_id = $2 AND id IN ($3, $4)) = 2
       ON CONFLICT DO NOTHING`,
      [edge.edge_id, teamId, a, b],
      { orgId, teamId, type: 'edge.created', data: edge },
      toEdge,
    );
    if (!inserted) await explainRefusedEdge(tx, teamId, participants);
    return { edge, orgId };
  });
  deps.events.announce(created.orgId);
  return created.edge;
}

/**
 * Throws why an edge between `participants` of team `teamId` was not inserted.
 * Errors: `unknown_reference` (a participant not in the team: checked first), `conflict` (the
 * pair has an edge; `existing_id` names it).
 */
async function explainRefusedEdge(tx: Queryable, teamId: string, participants: [string, string]): Promise<never> {
  const [a, b] = participants;
  const found = await tx.query<{ id: string }>(`SELECT id FROM participants WHERE team_id = $1 AND id IN ($2, $3)`, [teamId, a, b]);
  const missing = participants.map((id, index) => ({ id, index })).filter(({ id }) => !found.some((row) => row.id === id));
  if (missing.length > 0) {
    throw new ServiceError('unknown_reference', `no agent or human of this team has id ${missing.map((m) => m.id).join(', ')}`, {
      errors: missing.map((m) => ({ path: `participants.${m.index}`, message: 'not an agent or human of this team' })),
    });
  }
  const existing = await tx.query<{ id: string }>(
    `SELECT id FROM edges WHERE LEAST(participant_a, participant_b) = LEAST($1::uuid, $2::uuid)
      AND GREATEST(participant_a, participant_b) = GREATEST($1::uuid, $2::uuid)`,
    [a, b],
  );
  throw new ServiceError('conflict', 'an edge between these participants already exists', { extra: { existing_id: existing[0]?.id } });
}

/** Lists a team's edges. Errors: `not_found` (team). */
export async function listEdges(deps: DomainDeps, caller: Caller, teamId: string): Promise<Edge[]> {
  await getTeam(deps.db, caller, teamId);
  return listEdgesOfTeam(deps.db, teamId);
}

/**
 * Deletes an edge and, by cascade, its threads and messages; writes `edge.deleted` (contract §9).
 * Errors: `not_found`.
 */
export async function deleteEdge(deps: DomainDeps, caller: Caller, edgeId: string): Promise<void> {
  const orgId = await deps.db.transaction(async (tx) => {
    const edge = await getEdge(tx, caller, edgeId);
    const [team] = await tx.query<{ org_id: string }>(`SELECT org_id FROM teams WHERE id = $1`, [edge.team_id]);
    await tx.query(`DELETE FROM edges WHERE id = $1`, [edgeId]);
    await appendEvent(tx, { orgId: team!.org_id, teamId: edge.team_id, type: 'edge.deleted', data: { edge_id: edgeId } });
    return team!.org_id;
  });
  deps.events.announce(orgId);
}
