import type { FastifyInstance } from 'fastify';
import { UsageQuery } from '../../../api/schemas.ts';
import { getAgentUsage, getTeamUsage } from '../../domain/usage.ts';
import { callerOf } from '../auth.ts';
import { parseInput } from '../validate.ts';
import type { Params, RouteContext } from './context.ts';

/**
 * Usage routes (an addition to contract §5): `GET /agents/{agent_id}/usage?since=` → 200
 * AgentUsage, `GET /teams/{team_id}/usage?since=` → 200 TeamUsage: provider tokens spent from
 * `since` (ISO 8601 with `Z` or an offset; default the start of the current UTC day) and daily
 * budget state. Errors: `not_found` (also for another organization's id), `invalid_request`
 * (a malformed `since`, an unknown query parameter).
 */
export function usageRoutes(app: FastifyInstance, { deps }: RouteContext): void {
  app.get<Params<'agent_id'> & { Querystring: Record<string, unknown> }>('/agents/:agent_id/usage', async (request) => {
    const query = parseInput(UsageQuery, request.query);
    return getAgentUsage(deps, callerOf(request), request.params.agent_id, query.since);
  });
  app.get<Params<'team_id'> & { Querystring: Record<string, unknown> }>('/teams/:team_id/usage', async (request) => {
    const query = parseInput(UsageQuery, request.query);
    return getTeamUsage(deps, callerOf(request), request.params.team_id, query.since);
  });
}
