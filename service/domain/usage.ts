/**
 * Token usage of provider agents and the state of their daily budgets (an addition to the
 * contract: `GET /agents/{agent_id}/usage`, `GET /teams/{team_id}/usage`). The agent loop writes
 * one `agent_usage` row per provider reply and adds its tokens to `agent_daily_usage`.
 */
import type { AgentUsage, ModelUsage, Provider, TeamUsage } from '../../api/schemas.ts';
import type { Queryable } from '../storage/db.ts';
import type { Caller, DomainDeps } from './caller.ts';
import { iso } from './ids.ts';
import { getAgent } from './participants.ts';
import { getTeam } from './teams.ts';

interface UsageRow {
  agent_id: string;
  provider: Provider;
  model: string;
  calls: number;
  input_tokens: number;
  output_tokens: number;
}

interface BudgetRow {
  agent_id: string;
  name: string | null;
  provider: Provider | null;
  max_tokens_per_day: number | null;
  tokens_today: number;
}

interface Window {
  /** ISO 8601 UTC with milliseconds, formatted by the database: any year a timestamp holds survives. */
  since: string;
  next_day: Date;
}

/** The window's start (`since`, default the start of the current UTC day) and the next UTC day, by the database's clock. */
async function window(db: Queryable, since: string | undefined): Promise<Window> {
  const rows = await db.query<Window>(
    `SELECT to_char(COALESCE($1::timestamptz, date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',
                    'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS since,
            (date_trunc('day', now() AT TIME ZONE 'UTC') + interval '1 day') AT TIME ZONE 'UTC' AS next_day`,
    // As UTC: an ISO 8601 offset may run to ±23:59, PostgreSQL reads at most ±15:59 (a larger one
    // was a 500). The query schema has checked that `since` is a time.
    [since === undefined ? null : new Date(since).toISOString()],
  );
  return rows[0]!;
}

/** Usage rows of a team (optionally one agent) since the window's start, by agent, provider and model. */
async function usageRows(db: Queryable, teamId: string, since: string, agentId: string | null): Promise<UsageRow[]> {
  return db.query<UsageRow>(
    `SELECT agent_id, provider, model, count(*)::int AS calls,
            sum(input_tokens)::float8 AS input_tokens, sum(output_tokens)::float8 AS output_tokens
       FROM agent_usage
      WHERE team_id = $1 AND created_at >= $2::timestamptz AND ($3::uuid IS NULL OR agent_id = $3)
      GROUP BY agent_id, provider, model ORDER BY agent_id, provider, model`,
    [teamId, since, agentId],
  );
}

/** Budget state of a team's agents (or `agentId` alone), with today's tokens, oldest agent first. */
async function budgetRows(db: Queryable, teamId: string, agentId: string | null): Promise<BudgetRow[]> {
  return db.query<BudgetRow>(
    `SELECT p.id AS agent_id, p.name, p.provider, p.max_tokens_per_day, COALESCE(d.tokens, 0)::float8 AS tokens_today
       FROM participants p
       LEFT JOIN agent_daily_usage d ON d.agent_id = p.id AND d.day = (now() AT TIME ZONE 'UTC')::date
      WHERE p.team_id = $1 AND p.kind = 'agent' AND ($2::uuid IS NULL OR p.id = $2)
      ORDER BY p.created_at, p.id`,
    [teamId, agentId],
  );
}

/** One agent's usage from its rows and budget (a deleted agent has no budget row: name and budget null). */
function agentUsage(agentId: string, teamId: string, rows: UsageRow[], budget: BudgetRow | undefined, w: Window): AgentUsage {
  const byModel: ModelUsage[] = rows.map((r) => ({
    provider: r.provider,
    model: r.model,
    calls: r.calls,
    input_tokens: r.input_tokens,
    output_tokens: r.output_tokens,
  }));
  const input = byModel.reduce((sum, m) => sum + m.input_tokens, 0);
  const output = byModel.reduce((sum, m) => sum + m.output_tokens, 0);
  const max = budget?.max_tokens_per_day ?? null;
  const today = budget?.tokens_today ?? 0;
  return {
    agent_id: agentId,
    team_id: teamId,
    name: budget?.name ?? null,
    since: w.since,
    calls: byModel.reduce((sum, m) => sum + m.calls, 0),
    input_tokens: input,
    output_tokens: output,
    total_tokens: input + output,
    by_model: byModel,
    max_tokens_per_day: max,
    tokens_today: today,
    budget_exhausted_until: max !== null && today >= max ? iso(w.next_day) : null,
  };
}

/**
 * The token usage of one agent from `since` on (ISO 8601; default: the start of the current UTC
 * day): calls, input, output and total tokens, by provider and model, and its budget state
 * (`max_tokens_per_day`, `tokens_today`, `budget_exhausted_until`: the next UTC day while the
 * budget is spent). Errors: `not_found` (no such agent, or not reachable by the caller).
 */
export async function getAgentUsage(deps: DomainDeps, caller: Caller, agentId: string, since?: string): Promise<AgentUsage> {
  const agent = await getAgent(deps, caller, agentId);
  const w = await window(deps.db, since);
  const rows = await usageRows(deps.db, agent.team_id, w.since, agent.agent_id);
  const budgets = await budgetRows(deps.db, agent.team_id, agent.agent_id);
  return agentUsage(agent.agent_id, agent.team_id, rows, budgets[0], w);
}

/**
 * The token usage of a team from `since` on (default: the start of the current UTC day): totals,
 * and per agent (every agent with a provider, and any agent with usage in the window, deleted ones
 * included with `name` null) as {@link getAgentUsage} gives it. The totals count every agent's
 * usage. Errors: `not_found` (no such team, or not reachable by the caller).
 */
export async function getTeamUsage(deps: DomainDeps, caller: Caller, teamId: string, since?: string): Promise<TeamUsage> {
  const team = await getTeam(deps.db, caller, teamId);
  const w = await window(deps.db, since);
  const rows = await usageRows(deps.db, team.team_id, w.since, null);
  const budgets = await budgetRows(deps.db, team.team_id, null);
  const used = new Set(rows.map((r) => r.agent_id));
  const ids = [...new Set([...budgets.filter((b) => b.provider !== null || used.has(b.agent_id)).map((b) => b.agent_id), ...used])];
  const agents = ids.map((id) =>
    agentUsage(
      id,
      team.team_id,
      rows.filter((r) => r.agent_id === id),
      budgets.find((b) => b.agent_id === id),
      w,
    ),
  );
  const input = agents.reduce((sum, a) => sum + a.input_tokens, 0);
  const output = agents.reduce((sum, a) => sum + a.output_tokens, 0);
  return {
    team_id: team.team_id,
    since: w.since,
    calls: agents.reduce((sum, a) => sum + a.calls, 0),
    input_tokens: input,
    output_tokens: output,
    total_tokens: input + output,
    agents,
  };
}
