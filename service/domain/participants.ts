import { ServiceError } from '../../errors/catalogue.ts';
import type { AgentTools, AgentToolsBody } from '../../api/agent-tools.ts';
import type { Agent, AgentStatus, Human, Provider } from '../../api/schemas.ts';
import { insertUnlessTaken, type Queryable } from '../storage/db.ts';
import { prepareTools, toolsResource } from './agent-tools.ts';
import type { A2aParticipant, A2aParticipantBody } from '../../api/remote-a2a.ts';
import { a2aResource, prepareA2a, type StoredA2a } from './a2a-participant.ts';
import { abandonOpenTurns } from './tool-calls.ts';
import { signalLive } from '../events/deltas.ts';
import { wakeAgentWork } from './agent-work.ts';
import { reaches, type Caller, type DomainDeps } from './caller.ts';
import { lockDeletable } from './deletion.ts';
import { iso, isUuid, newId } from './ids.ts';
import { getTeam, lockTeamForChange } from './teams.ts';
import { appendEvent, insertWithEvent } from '../events/log.ts';

/** The two kinds of team participant; agents and humans share names and edges. */
export const ParticipantKinds = { agent: 'agent', human: 'human' } as const;
export type ParticipantKind = (typeof ParticipantKinds)[keyof typeof ParticipantKinds];

interface ParticipantRow {
  id: string;
  team_id: string;
  kind: ParticipantKind;
  name: string;
  description: string;
  provider: Provider | null;
  model: string | null;
  instructions: string;
  status: AgentStatus;
  email: string | null;
  deletion_protection: boolean;
  max_tokens_per_day: number | null;
  max_steps: number;
  /** `tools` in the API's form (stored JSON), null when none (migration 0022). */
  tools: AgentTools | string | null;
  /** The sealed header values of the agent's MCP servers: never leaves the service. */
  tool_secrets: string | null;
  /** `a2a` in the API's form (stored JSON), null unless a remote A2A agent (migration 0028). */
  a2a: A2aParticipant | string | null;
  /** The sealed header values of a remote A2A agent: never leaves the service. */
  a2a_secrets: string | null;
  created_at: Date;
  /** The team's organization (only where the statement selects it: {@link findParticipant}). */
  org_id?: string;
}

function toAgent(row: ParticipantRow): Agent {
  return {
    agent_id: row.id,
    team_id: row.team_id,
    name: row.name,
    description: row.description,
    provider: row.provider,
    model: row.model,
    instructions: row.instructions,
    status: row.status,
    deletion_protection: row.deletion_protection,
    max_tokens_per_day: row.max_tokens_per_day,
    max_steps: row.max_steps,
    tools: toolsResource(row.tools),
    a2a: a2aResource(row.a2a),
    created_at: iso(row.created_at),
  };
}

function toHuman(row: ParticipantRow): Human {
  return {
    human_id: row.id,
    team_id: row.team_id,
    name: row.name,
    email: row.email,
    deletion_protection: row.deletion_protection,
    created_at: iso(row.created_at),
  };
}

/** Lists the agents of a team, oldest first (no access check: callers checked the team). */
export async function listAgentsOfTeam(db: Queryable, teamId: string): Promise<Agent[]> {
  const rows = await db.query<ParticipantRow>(`SELECT * FROM participants WHERE team_id = $1 AND kind = 'agent' ORDER BY created_at, id`, [teamId]);
  return rows.map(toAgent);
}

/** Lists the humans of a team, oldest first (no access check: callers checked the team). */
export async function listHumansOfTeam(db: Queryable, teamId: string): Promise<Human[]> {
  const rows = await db.query<ParticipantRow>(`SELECT * FROM participants WHERE team_id = $1 AND kind = 'human' ORDER BY created_at, id`, [teamId]);
  return rows.map(toHuman);
}

async function findParticipant(db: Queryable, caller: Caller, kind: ParticipantKind, id: string): Promise<ParticipantRow> {
  if (!isUuid(id)) throw new ServiceError('not_found', `${kind} not found`);
  const rows = await db.query<ParticipantRow>(
    `SELECT p.*, t.org_id FROM participants p JOIN teams t ON t.id = p.team_id JOIN organizations o ON o.id = t.org_id
      WHERE p.id = $2 AND p.kind = $3 AND ${reaches('o', 1)}`,
    [caller.orgId, id, kind],
  );
  if (!rows[0]) throw new ServiceError('not_found', `${kind} not found`);
  return rows[0];
}

/**
 * Locks the team row and throws `conflict` (with `existing_id`) when another agent or human of
 * the team is named `name` (contract §2: agents and humans share one name space), or
 * `not_found` when the team was deleted meanwhile (its deletion held the lock first).
 */
async function assertNameFree(tx: Queryable, teamId: string, name: string, exceptId?: string): Promise<void> {
  const locked = await tx.query(`SELECT 1 FROM teams WHERE id = $1 FOR UPDATE`, [teamId]);
  if (locked.length === 0) throw new ServiceError('not_found', 'team not found');
  const rows = await tx.query<{ id: string }>(`SELECT id FROM participants WHERE team_id = $1 AND name = $2 AND id <> $3`, [
    teamId,
    name,
    exceptId ?? '00000000-0000-0000-0000-000000000000',
  ]);
  if (rows[0]) throw new ServiceError('conflict', `a participant named "${name}" already exists in this team`, { extra: { existing_id: rows[0].id } });
}

/**
 * Inserts `row` unless its team already has a participant named as it (the team's unique name
 * index, migration 0001: agents and humans share it), with its `<kind>.created` event (`data`
 * is `row` in its wire form) in the same statement. Call with the team held
 * ({@link lockTeamForChange}: a rename or deletion of the participant that took the name waits
 * for it), so that a name found taken is still taken, and with
 * `row.created_at` the transaction's `now()`, the column's default.
 * Errors: `conflict` (with `existing_id`).
 */
async function insertParticipant<W extends Record<string, unknown>>(
  tx: Queryable,
  orgId: string,
  row: ParticipantRow,
  wire: (row: ParticipantRow) => W,
): Promise<W> {
  const { created_at: _createdAt, org_id: _orgId, ...rest } = row;
  // jsonb takes the JSON text; null stays SQL null.
  const values = { ...rest, tools: rest.tools === null ? null : JSON.stringify(rest.tools), a2a: rest.a2a === null ? null : JSON.stringify(rest.a2a) };
  const created = wire(row);
  const { sql, params } = insertUnlessTaken('participants', values, 'team_id, name');
  const inserted = await insertWithEvent<ParticipantRow>(
    tx,
    sql,
    params,
    { orgId, teamId: row.team_id, type: `${row.kind}.created`, data: created },
    wire,
  );
  if (inserted) return created;
  const [taken] = await tx.query<{ id: string }>(`SELECT id FROM participants WHERE team_id = $1 AND name = $2`, [row.team_id, row.name]);
  throw new ServiceError('conflict', `a participant named "${row.name}" already exists in this team`, { extra: { existing_id: taken?.id } });
}

/**
 * A new participant row: `fields` (those not undefined) over the columns' defaults (migration
 * 0001 and later), of `kind` in team `teamId`, created at `now` (the transaction's `now()`).
 */
function newParticipantRow(teamId: string, kind: ParticipantKind, now: Date, fields: Partial<ParticipantRow> & { name: string }): ParticipantRow {
  const given = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
  return {
    id: newId(),
    team_id: teamId,
    kind,
    description: '',
    provider: null,
    model: null,
    instructions: '',
    status: 'active',
    email: null,
    deletion_protection: false,
    max_tokens_per_day: null,
    max_steps: 10,
    tools: null,
    tool_secrets: null,
    a2a: null,
    a2a_secrets: null,
    created_at: now,
    ...given,
  } as ParticipantRow;
}

/** The writable fields of an agent (contract §5). */
export interface AgentInput {
  name?: string | undefined;
  description?: string | undefined;
  provider?: Provider | null | undefined;
  model?: string | null | undefined;
  instructions?: string | undefined;
  status?: AgentStatus | undefined;
  deletion_protection?: boolean | undefined;
  max_tokens_per_day?: number | null | undefined;
  max_steps?: number | undefined;
  /** What the agent may call (contract §11); null: nothing. */
  tools?: AgentToolsBody | null | undefined;
  /** A remote A2A agent (contract §12); null: not one. */
  a2a?: A2aParticipantBody | null | undefined;
}

/** The URL rules of the deployment (`--webhook-allow-private`), default public https only. */
function urlPolicyOf(deps: DomainDeps) {
  return deps.urls ?? { allowPrivate: false };
}

/**
 * A provider other than `echo` runs a vendor's model, so the agent must name one (contract §8).
 * Errors: `invalid_request` naming `model`.
 */
function assertModelForProvider(provider: Provider | null | undefined, model: string | null | undefined): void {
  if (provider && provider !== 'echo' && !model) {
    throw new ServiceError('invalid_request', `model: required for provider ${provider}`, {
      errors: [{ path: 'model', message: `required for provider ${provider} (only echo runs without a model)` }],
    });
  }
}

/**
 * Adds an agent to a team; defaults: description "", provider null (external agent), model null,
 * instructions "", status active, deletion_protection false, max_tokens_per_day null (unlimited),
 * max_steps 10, tools null (contract §11). Writes `agent.created` (contract §9).
 * Errors: `invalid_request` (a provider other than echo without a model; tools that break a rule of
 * §11, domain/agent-tools.ts; `a2a` with a provider or tools, contract §12), `not_found` (team), `conflict` (name taken), `unknown_reference`
 * (`tools.approval.by` names no human of the team), `webhook_url_refused` (a server's URL).
 */
export async function createAgent(deps: DomainDeps, caller: Caller, teamId: string, input: AgentInput & { name: string }): Promise<Agent> {
  assertModelForProvider(input.provider, input.model);
  const agent = await deps.db.transaction(async (tx) => {
    const { orgId, now } = await lockTeamForChange(tx, caller, teamId);
    const { name, description, provider, model, instructions, status, deletion_protection, max_tokens_per_day, max_steps } = input;
    const stored = await prepareTools(tx, { teamId, provider: provider ?? null, secrets: deps.secrets, policy: urlPolicyOf(deps) }, input.tools ?? null, null);
    const remote = await prepareA2a({ provider: provider ?? null, hasTools: stored.tools !== null, secrets: deps.secrets, policy: urlPolicyOf(deps) }, input.a2a ?? null, null);
    const row = newParticipantRow(teamId, 'agent', now, {
      name,
      description,
      provider,
      model,
      instructions,
      status,
      deletion_protection,
      max_tokens_per_day,
      max_steps,
      tools: stored.tools,
      tool_secrets: stored.sealed,
      a2a: remote.a2a,
      a2a_secrets: remote.sealed,
    });
    return { created: await insertParticipant(tx, orgId, row, toAgent), orgId };
  });
  deps.events.announce(agent.orgId);
  return agent.created;
}

/** Lists a team's agents. Errors: `not_found` (team). */
export async function listAgents(deps: DomainDeps, caller: Caller, teamId: string): Promise<Agent[]> {
  await getTeam(deps.db, caller, teamId);
  return listAgentsOfTeam(deps.db, teamId);
}

/** Returns one agent. Errors: `not_found`. */
export async function getAgent(deps: DomainDeps, caller: Caller, agentId: string): Promise<Agent> {
  return toAgent(await findParticipant(deps.db, caller, 'agent', agentId));
}

/**
 * The row a statement that locks it (SELECT … FOR NO KEY UPDATE, UPDATE … RETURNING) gave back.
 * Errors: `not_found` when there is none: a deletion holding the row's lock committed first, so
 * the participant is gone.
 */
function updatedRow(rows: ParticipantRow[], kind: ParticipantKind): ParticipantRow {
  if (!rows[0]) throw new ServiceError('not_found', `${kind} not found`);
  return rows[0];
}

/**
 * Changes any agent field but ids (`deletion_protection` included, contract §4); `null` clears
 * provider, model, max_tokens_per_day or tools. `tools` replaces the whole object (contract §11; a
 * server given without `headers` keeps those stored for its name). Parked work of the agent
 * becomes due at once (an agent made active, a budget raised: agent-work.ts). Writes
 * `agent.updated` (contract §9).
 * Errors: `not_found` (also when deleted meanwhile), `conflict`, `invalid_request` (the agent
 * would have a provider other than echo and no model, or tools without a provider, or tools that
 * break a rule of §11), `unknown_reference` (`tools.approval.by`), `webhook_url_refused`.
 */
export async function updateAgent(deps: DomainDeps, caller: Caller, agentId: string, patch: AgentInput): Promise<Agent> {
  const agent = await deps.db.transaction(async (tx) => {
    const found = await findParticipant(tx, caller, 'agent', agentId);
    if (patch.name !== undefined) await assertNameFree(tx, found.team_id, patch.name, agentId);
    // The UPDATE below writes every field, so the fields it keeps must be read under the row lock
    // (after the team's, the order deletions take them in): read before it, a concurrent PATCH's
    // change (a budget, a provider, a status) would be written back over.
    const row = updatedRow(await tx.query<ParticipantRow>(`SELECT * FROM participants WHERE id = $1 FOR NO KEY UPDATE`, [agentId]), 'agent');
    const { tools: toolsPatch, a2a: a2aPatch, ...fields } = patch;
    const next = { ...row, ...Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) } as ParticipantRow;
    assertModelForProvider(next.provider, next.model);
    // Tools are checked against the agent as the PATCH leaves it: tools kept on an agent whose
    // provider is removed are refused as tools given to one without.
    const previous = { tools: toolsResource(row.tools), sealed: row.tool_secrets };
    const context = { teamId: found.team_id, provider: next.provider, secrets: deps.secrets, policy: urlPolicyOf(deps) };
    const stored =
      toolsPatch !== undefined
        ? await prepareTools(tx, context, toolsPatch, previous)
        : previous.tools !== null && next.provider === null
          ? await prepareTools(tx, context, {}, previous)
          : previous;
    // `a2a` is checked against the agent as the PATCH leaves it too: one kept on an agent given a
    // provider (or tools) is refused as one given to it.
    const previousA2a: StoredA2a = { a2a: a2aResource(row.a2a), sealed: row.a2a_secrets };
    const a2aContext = { provider: next.provider, hasTools: stored.tools !== null, secrets: deps.secrets, policy: urlPolicyOf(deps) };
    const remote =
      a2aPatch !== undefined
        ? await prepareA2a(a2aContext, a2aPatch, previousA2a)
        : previousA2a.a2a !== null && (next.provider !== null || stored.tools !== null)
          ? await prepareA2a(a2aContext, { url: previousA2a.a2a.url }, previousA2a)
          : previousA2a;
    // deletion_protection is set from the patch alone, not from the row read above: a value read
    // before this statement took the row lock would undo a concurrent change of the flag.
    const rows = await tx.query<ParticipantRow>(
      `UPDATE participants SET name = $2, description = $3, provider = $4, model = $5, instructions = $6, status = $7,
         max_tokens_per_day = $8, deletion_protection = COALESCE($9, deletion_protection), max_steps = $10,
         tools = $11::jsonb, tool_secrets = $12, a2a = $13::jsonb, a2a_secrets = $14
        WHERE id = $1 RETURNING *`,
      [
        agentId,
        next.name,
        next.description,
        next.provider,
        next.model,
        next.instructions,
        next.status,
        next.max_tokens_per_day,
        patch.deletion_protection ?? null,
        next.max_steps,
        stored.tools === null ? null : JSON.stringify(stored.tools),
        stored.sealed,
        remote.a2a === null ? null : JSON.stringify(remote.a2a),
        remote.sealed,
      ],
    );
    const updated = updatedRow(rows, 'agent');
    const abandoned =
      previous.tools !== null && stored.tools === null ? await abandonOpenTurns(tx, agentId, 'tools_removed: the agent\'s tools were removed while this turn was open') : [];
    // Another remote (or none): what was exchanged with the one before means nothing to it.
    if (previousA2a.a2a !== null && previousA2a.a2a.url !== remote.a2a?.url) await tx.query(`DELETE FROM a2a_exchanges WHERE agent_id = $1`, [agentId]);
    if (next.provider !== null || remote.a2a !== null) await wakeAgentWork(tx, agentId, { backfill: row.provider === null && row.a2a === null });
    const changed = toAgent(updated);
    await appendEvent(tx, { orgId: found.org_id!, teamId: found.team_id, type: 'agent.updated', data: changed });
    return { changed, orgId: found.org_id!, abandoned };
  });
  deps.events.announce(agent.orgId);
  for (const threadId of agent.abandoned) signalLive(deps.events, threadId);
  return agent.changed;
}

/**
 * Adds a human to a team; email defaults to null, deletion_protection to false. Writes
 * `human.created` (contract §9). Errors: `not_found` (team), `conflict`.
 */
export async function createHuman(
  deps: DomainDeps,
  caller: Caller,
  teamId: string,
  input: { name: string; email?: string | null | undefined; deletion_protection?: boolean | undefined },
): Promise<Human> {
  const human = await deps.db.transaction(async (tx) => {
    const { orgId, now } = await lockTeamForChange(tx, caller, teamId);
    const row = newParticipantRow(teamId, 'human', now, { name: input.name, email: input.email, deletion_protection: input.deletion_protection });
    return { created: await insertParticipant(tx, orgId, row, toHuman), orgId };
  });
  deps.events.announce(human.orgId);
  return human.created;
}

/** Lists a team's humans. Errors: `not_found` (team). */
export async function listHumans(deps: DomainDeps, caller: Caller, teamId: string): Promise<Human[]> {
  await getTeam(deps.db, caller, teamId);
  return listHumansOfTeam(deps.db, teamId);
}

/** Returns one human. Errors: `not_found`. */
export async function getHuman(deps: DomainDeps, caller: Caller, humanId: string): Promise<Human> {
  return toHuman(await findParticipant(deps.db, caller, 'human', humanId));
}

/**
 * Renames a human, changes the email (`null` clears it) or sets `deletion_protection`; writes
 * `human.updated` (contract §9).
 * Errors: `not_found` (also when deleted meanwhile), `conflict`.
 */
export async function updateHuman(
  deps: DomainDeps,
  caller: Caller,
  humanId: string,
  patch: { name?: string | undefined; email?: string | null | undefined; deletion_protection?: boolean | undefined },
): Promise<Human> {
  const human = await deps.db.transaction(async (tx) => {
    const row = await findParticipant(tx, caller, 'human', humanId);
    if (patch.name !== undefined) await assertNameFree(tx, row.team_id, patch.name, humanId);
    // Each field the patch leaves out is kept by the statement itself, from the row as it is once
    // the lock is had: written from the row read above, a PATCH that waited for a concurrent one
    // would write that one's name or email back over.
    const rows = await tx.query<ParticipantRow>(
      `UPDATE participants SET name = COALESCE($2::text, name), email = CASE WHEN $3::boolean THEN $4::text ELSE email END,
         deletion_protection = COALESCE($5::boolean, deletion_protection)
        WHERE id = $1 RETURNING *`,
      [humanId, patch.name ?? null, patch.email !== undefined, patch.email ?? null, patch.deletion_protection ?? null],
    );
    const changed = toHuman(updatedRow(rows, 'human'));
    await appendEvent(tx, { orgId: row.org_id!, teamId: row.team_id, type: 'human.updated', data: changed });
    return { changed, orgId: row.org_id! };
  });
  deps.events.announce(human.orgId);
  return human.changed;
}

/**
 * Deletes an agent or a human and writes `agent.deleted` or `human.deleted` (contract §9). Errors: `not_found`; `deletion_protected` (with `protected`) while
 * its `deletion_protection` is true; `in_use` while it is on an edge (delete the edge first, so
 * that no thread loses a participant silently).
 */
export async function deleteParticipant(deps: DomainDeps, caller: Caller, kind: ParticipantKind, id: string): Promise<void> {
  const orgId = await deps.db.transaction(async (tx) => {
    const row = await findParticipant(tx, caller, kind, id);
    const team = await tx.query(`SELECT 1 FROM teams WHERE id = $1 FOR UPDATE`, [row.team_id]);
    if (team.length === 0) throw new ServiceError('not_found', `${kind} not found`);
    // Protection first: an edge can be deleted, protection has to be cleared on purpose.
    await lockDeletable(tx, { kind, id });
    const edges = await tx.query<{ id: string }>(`SELECT id FROM edges WHERE participant_a = $1 OR participant_b = $1 LIMIT 1`, [id]);
    if (edges[0]) throw new ServiceError('in_use', `the ${kind} is on edge ${edges[0].id}; delete the edge first`, { extra: { edge_id: edges[0].id } });
    await tx.query(`DELETE FROM participants WHERE id = $1`, [id]);
    await appendEvent(tx, { orgId: row.org_id!, teamId: row.team_id, type: `${kind}.deleted`, data: { [`${kind}_id`]: id } });
    return row.org_id!;
  });
  deps.events.announce(orgId);
}
