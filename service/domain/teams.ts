import { ServiceError } from '../../errors/catalogue.ts';
import type { Team, TeamDeletionPreview } from '../../api/schemas.ts';
import type { Queryable } from '../storage/db.ts';
import { assertOrganizationReachable } from './access-checks.ts';
import { countTeamAttachments, deleteTeamAttachments } from './attachments.ts';
import { reaches, type Caller, type DomainDeps } from './caller.ts';
import { iso, isUuid, newId } from './ids.ts';

const selectTeam = `
  SELECT t.id, t.org_id, t.name, t.description, t.engine_id, t.created_at,
    (SELECT count(*)::int FROM participants p WHERE p.team_id = t.id AND p.kind = 'agent') AS agent_count,
    (SELECT count(*)::int FROM edges e WHERE e.team_id = t.id) AS edge_count
  FROM teams t JOIN organizations o ON o.id = t.org_id`;

interface TeamRow {
  id: string;
  org_id: string;
  name: string;
  description: string;
  engine_id: string;
  created_at: Date;
  agent_count: number;
  edge_count: number;
}

function toTeam(row: TeamRow): Team {
  return {
    team_id: row.id,
    org_id: row.org_id,
    team_name: row.name,
    description: row.description,
    agent_count: row.agent_count,
    edge_count: row.edge_count,
    engine_id: row.engine_id,
    created_at: iso(row.created_at),
  };
}

/**
 * Returns the team `teamId` if the caller reaches its organization.
 * Errors: `not_found` otherwise (contract §2).
 */
export async function getTeam(db: Queryable, caller: Caller, teamId: string): Promise<Team> {
  if (!isUuid(teamId)) throw new ServiceError('not_found', 'team not found');
  const rows = await db.query<TeamRow>(`${selectTeam} WHERE t.id = $2 AND ${reaches('o', 1)}`, [caller.orgId, teamId]);
  if (!rows[0]) throw new ServiceError('not_found', 'team not found');
  return toTeam(rows[0]);
}

/** Throws `conflict` (with `existing_id`) when another team of `orgId` is named `name`. */
async function assertTeamNameFree(db: Queryable, orgId: string, name: string, exceptId?: string): Promise<void> {
  const rows = await db.query<{ id: string }>(`SELECT id FROM teams WHERE org_id = $1 AND name = $2 AND id <> $3`, [
    orgId,
    name,
    exceptId ?? '00000000-0000-0000-0000-000000000000',
  ]);
  if (rows[0]) throw new ServiceError('conflict', `a team named "${name}" already exists`, { extra: { existing_id: rows[0].id } });
}

/**
 * Creates an empty team in `orgId` (contract §5); `description` defaults to "" and `engine_id`
 * is assigned here.
 * Errors: `not_found` (organization out of reach), `conflict` (team name taken in the organization).
 */
export async function createTeam(
  deps: DomainDeps,
  caller: Caller,
  orgId: string,
  input: { team_name: string; description?: string | undefined },
): Promise<Team> {
  const id = await deps.db.transaction(async (tx) => {
    await assertOrganizationReachable(tx, caller, orgId);
    // Row lock on the organization serialises name checks of concurrent creations.
    await tx.query(`SELECT 1 FROM organizations WHERE id = $1 FOR UPDATE`, [orgId]);
    await assertTeamNameFree(tx, orgId, input.team_name);
    const teamId = newId();
    await tx.query(`INSERT INTO teams (id, org_id, name, description, engine_id) VALUES ($1, $2, $3, $4, $5)`, [
      teamId,
      orgId,
      input.team_name,
      input.description ?? '',
      newId(),
    ]);
    return teamId;
  });
  return getTeam(deps.db, caller, id);
}

/** Lists the teams of `orgId`, oldest first. Errors: `not_found` (organization out of reach). */
export async function listTeams(deps: DomainDeps, caller: Caller, orgId: string): Promise<Team[]> {
  await assertOrganizationReachable(deps.db, caller, orgId);
  const rows = await deps.db.query<TeamRow>(`${selectTeam} WHERE t.org_id = $1 ORDER BY t.created_at, t.id`, [orgId]);
  return rows.map(toTeam);
}

/**
 * Renames a team or changes its description. Errors: `not_found`, `conflict` (name taken).
 */
export async function updateTeam(
  deps: DomainDeps,
  caller: Caller,
  teamId: string,
  patch: { team_name?: string | undefined; description?: string | undefined },
): Promise<Team> {
  await deps.db.transaction(async (tx) => {
    const team = await getTeam(tx, caller, teamId);
    if (patch.team_name !== undefined) {
      await tx.query(`SELECT 1 FROM organizations WHERE id = $1 FOR UPDATE`, [team.org_id]);
      await assertTeamNameFree(tx, team.org_id, patch.team_name, teamId);
    }
    await tx.query(`UPDATE teams SET name = COALESCE($2, name), description = COALESCE($3, description) WHERE id = $1`, [
      teamId,
      patch.team_name ?? null,
      patch.description ?? null,
    ]);
  });
  return getTeam(deps.db, caller, teamId);
}

/** Counts of what deleting a team would remove (contract §5 GET /teams/{id}/deletion-preview); declared in api/schemas.ts. */
export type DeletionPreview = TeamDeletionPreview;

/** Reports what `DELETE /teams/{id}` would remove. Errors: `not_found`. */
export async function previewTeamDeletion(deps: DomainDeps, caller: Caller, teamId: string): Promise<DeletionPreview> {
  await getTeam(deps.db, caller, teamId);
  const rows = await deps.db.query<Omit<DeletionPreview, 'team_id' | 'attachments'>>(
    `SELECT
      (SELECT count(*)::int FROM participants WHERE team_id = $1 AND kind = 'agent') AS agents,
      (SELECT count(*)::int FROM participants WHERE team_id = $1 AND kind = 'human') AS humans,
      (SELECT count(*)::int FROM edges WHERE team_id = $1) AS edges,
      (SELECT count(*)::int FROM threads WHERE team_id = $1) AS threads,
      (SELECT count(*)::int FROM messages m JOIN threads th ON th.id = m.thread_id WHERE th.team_id = $1) AS messages`,
    [teamId],
  );
  return { team_id: teamId, ...rows[0]!, attachments: await countTeamAttachments(deps.db, teamId) };
}

/**
 * Deletes a team and, by cascade, its agents, humans, edges, threads and messages, and the
 * attachments its messages name that no other team's message names.
 * Errors: `not_found`.
 */
export async function deleteTeam(deps: DomainDeps, caller: Caller, teamId: string): Promise<{ deleted: true; team_id: string }> {
  await deps.db.transaction(async (tx) => {
    await getTeam(tx, caller, teamId);
    await deleteTeamAttachments(tx, teamId);
    await tx.query(`DELETE FROM teams WHERE id = $1`, [teamId]);
  });
  return { deleted: true, team_id: teamId };
}
