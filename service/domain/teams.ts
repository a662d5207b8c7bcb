import { ServiceError } from '../../errors/catalogue.ts';
import type { Team, TeamDeletionPreview } from '../../api/schemas.ts';
import { insertUnlessTaken, type Queryable } from '../storage/db.ts';
import { assertOrganizationReachable } from './access-checks.ts';
import { deleteTeamAttachments } from './attachments.ts';
import { reaches, type Caller, type DomainDeps } from './caller.ts';
import { countCascade, lockDeletable, protectedResources } from './deletion.ts';
import { iso, isUuid, newId } from './ids.ts';
import { appendEvent, insertWithEvent } from '../events/log.ts';

const selectTeam = `
  SELECT t.id, t.org_id, t.name, t.description, t.engine_id, t.deletion_protection, t.created_at,
    (SELECT count(*)::int FROM participants p WHERE p.team_id = t.id AND p.kind = 'agent') AS agent_count,
    (SELECT count(*)::int FROM edges e WHERE e.team_id = t.id) AS edge_count
  FROM teams t JOIN organizations o ON o.id = t.org_id`;

interface TeamRow {
  id: string;
  org_id: string;
  name: string;
  description: string;
  engine_id: string;
  deletion_protection: boolean;
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
    deletion_protection: row.deletion_protection,
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

/**
 * Holds team `teamId` for a creation of one of its members — an agent, a human, an edge — if the
 * caller reaches its organization, and returns the organization's id and the transaction's
 * `now()` (the `created_at` of what it creates). The hold is `FOR KEY SHARE`: the team's deletion
 * and its members' renames and deletions (`FOR UPDATE`) wait for the creation, and it for them,
 * but creations do not wait for each other: names and pairs stay unique through the unique
 * indexes the inserts name (`ON CONFLICT DO NOTHING`). With `FOR UPDATE` the creations of one
 * team's members committed one at a time (docs/performance.md, "Then: creations in one team side
 * by side"). One statement where a read of the team and its lock were two: a create of a member
 * runs two statements in its transaction.
 * Errors: `not_found` (out of reach, or deleted meanwhile: its deletion held the lock first).
 */
export async function lockTeamForChange(tx: Queryable, caller: Caller, teamId: string): Promise<{ orgId: string; now: Date }> {
  if (!isUuid(teamId)) throw new ServiceError('not_found', 'team not found');
  const rows = await tx.query<{ org_id: string; now: Date }>(
    `SELECT t.org_id, now() AS now FROM teams t JOIN organizations o ON o.id = t.org_id WHERE t.id = $2 AND ${reaches('o', 1)} FOR KEY SHARE OF t`,
    [caller.orgId, teamId],
  );
  if (!rows[0]) throw new ServiceError('not_found', 'team not found');
  return { orgId: rows[0].org_id, now: rows[0].now };
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
 * Creates an empty team in `orgId` (contract §5); `description` defaults to "",
 * `deletion_protection` to false, and `engine_id` is assigned here. Writes `team.created` to the
 * organization's event log in the same transaction (contract §9).
 * Errors: `not_found` (organization out of reach, or deleted meanwhile), `conflict` (team name
 * taken in the organization, with `existing_id`).
 */
export async function createTeam(
  deps: DomainDeps,
  caller: Caller,
  orgId: string,
  input: { team_name: string; description?: string | undefined; deletion_protection?: boolean | undefined },
): Promise<Team> {
  if (!isUuid(orgId)) throw new ServiceError('not_found', 'organization not found');
  const team = await deps.db.transaction(async (tx) => {
    // The organization in reach, held against its deletion (FOR KEY SHARE, which the deletion's
    // FOR UPDATE waits for) but not against other teams' creations: the (org_id, name) index keeps
    // names unique. An exclusive lock here made an apply's team creations commit one at a time.
    const [org] = await tx.query<{ now: Date }>(`SELECT now() AS now FROM organizations o WHERE o.id = $2 AND ${reaches('o', 1)} FOR KEY SHARE OF o`, [
      caller.orgId,
      orgId,
    ]);
    if (!org) throw new ServiceError('not_found', 'organization not found');
    const row: Omit<TeamRow, 'agent_count' | 'edge_count' | 'created_at'> = {
      id: newId(),
      org_id: orgId,
      name: input.team_name,
      description: input.description ?? '',
      engine_id: newId(),
      deletion_protection: input.deletion_protection ?? false,
    };
    const wire = (stored: Omit<TeamRow, 'agent_count' | 'edge_count'>) => toTeam({ ...stored, agent_count: 0, edge_count: 0 });
    const created = wire({ ...row, created_at: org.now });
    const { sql, params } = insertUnlessTaken('teams', row, 'org_id, name');
    // The team that held the name may be deleted between the insert and the look for it (its
    // deletion takes no lock this creation holds): the name is then free, and the insert is tried
    // again. Each turn either inserts, finds the holder, or saw a holder deleted.
    for (let attempt = 1; ; attempt++) {
      const inserted = await insertWithEvent(
        tx,
        sql,
        params,
        { orgId, teamId: row.id, type: 'team.created', data: created },
        wire,
      );
      if (inserted) return created;
      const [taken] = await tx.query<{ id: string }>(`SELECT id FROM teams WHERE org_id = $1 AND name = $2`, [orgId, input.team_name]);
      if (taken || attempt === 3) {
        throw new ServiceError('conflict', `a team named "${input.team_name}" already exists`, { extra: taken ? { existing_id: taken.id } : {} });
      }
    }
  });
  deps.events.announce(orgId);
  return team;
}

/** Lists the teams of `orgId`, oldest first. Errors: `not_found` (organization out of reach). */
export async function listTeams(deps: DomainDeps, caller: Caller, orgId: string): Promise<Team[]> {
  await assertOrganizationReachable(deps.db, caller, orgId);
  const rows = await deps.db.query<TeamRow>(`${selectTeam} WHERE t.org_id = $1 ORDER BY t.created_at, t.id`, [orgId]);
  return rows.map(toTeam);
}

/**
 * Renames a team, changes its description or sets its `deletion_protection` (contract §4), and
 * writes `team.updated` (contract §9).
 * Errors: `not_found` (also when deleted meanwhile), `conflict` (name taken).
 */
export async function updateTeam(
  deps: DomainDeps,
  caller: Caller,
  teamId: string,
  patch: { team_name?: string | undefined; description?: string | undefined; deletion_protection?: boolean | undefined },
): Promise<Team> {
  const team = await deps.db.transaction(async (tx) => {
    const found = await getTeam(tx, caller, teamId);
    if (patch.team_name !== undefined) {
      await tx.query(`SELECT 1 FROM organizations WHERE id = $1 FOR UPDATE`, [found.org_id]);
      await assertTeamNameFree(tx, found.org_id, patch.team_name, teamId);
    }
    // FOR UPDATE, which waits for the creations of members in progress (they hold the team FOR KEY
    // SHARE; an UPDATE alone would not wait): the event's agent and edge counts are then the
    // team's, not those before a creation that commits first.
    await tx.query(`SELECT 1 FROM teams WHERE id = $1 FOR UPDATE`, [teamId]);
    const updated = await tx.query(
      `UPDATE teams SET name = COALESCE($2, name), description = COALESCE($3, description),
         deletion_protection = COALESCE($4, deletion_protection) WHERE id = $1 RETURNING id`,
      [teamId, patch.team_name ?? null, patch.description ?? null, patch.deletion_protection ?? null],
    );
    // A deletion that held the row lock committed first: the team is gone.
    if (updated.length === 0) throw new ServiceError('not_found', 'team not found');
    const changed = await getTeam(tx, caller, teamId);
    await appendEvent(tx, { orgId: found.org_id, teamId, type: 'team.updated', data: changed });
    return changed;
  });
  deps.events.announce(team.org_id);
  return team;
}

/**
 * Reports what `DELETE /teams/{id}` would remove (contract §5 GET /teams/{id}/deletion-preview),
 * and which of it is protected (`protected`: while not empty, the DELETE is refused).
 * Errors: `not_found`.
 */
export async function previewTeamDeletion(deps: DomainDeps, caller: Caller, teamId: string): Promise<TeamDeletionPreview> {
  await getTeam(deps.db, caller, teamId);
  const counts = await countCascade(deps.db, 'team', teamId);
  const found = await protectedResources(deps.db, { kind: 'team', id: teamId }, false);
  return { team_id: teamId, ...counts, protected: found ?? [] };
}

/**
 * Deletes a team and, by cascade, its agents, humans, edges, threads and messages, and the
 * attachments its messages name that no other team's message names; writes `team.deleted`
 * (contract §9; nothing for what went with the team).
 * Errors: `not_found`; `deletion_protected` (with `protected`) when the team or one of its agents
 * or humans has deletion protection: then nothing is deleted.
 */
export async function deleteTeam(deps: DomainDeps, caller: Caller, teamId: string): Promise<{ deleted: true; team_id: string }> {
  const orgId = await deps.db.transaction(async (tx) => {
    const team = await getTeam(tx, caller, teamId);
    await lockDeletable(tx, { kind: 'team', id: teamId });
    await deleteTeamAttachments(tx, teamId);
    await tx.query(`DELETE FROM teams WHERE id = $1`, [teamId]);
    await appendEvent(tx, { orgId: team.org_id, teamId, type: 'team.deleted', data: { team_id: teamId } });
    return team.org_id;
  });
  deps.events.announce(orgId);
  return { deleted: true, team_id: teamId };
}
