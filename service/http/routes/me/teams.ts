import type { FastifyInstance } from 'fastify';
import { getPersonTeamGraph } from '../../../domain/person-reach.ts';
import { personSessionOf } from '../../session-auth.ts';
import type { Params, RouteContext } from '../context.ts';

/**
 * `GET /me/teams/{team_id}` → 200 MeTeamGraph of one of the person's teams (read-only: agents,
 * humans, edges, as a member sees them: no instructions, tools or emails of others). Errors:
 * `not_found` (not one of the person's teams).
 */
export function meTeamRoutes(app: FastifyInstance, { deps }: RouteContext): void {
  app.get<Params<'team_id'>>('/me/teams/:team_id', async (request) =>
    getPersonTeamGraph(deps, { humanIds: personSessionOf(request).humanIds }, request.params.team_id),
  );
}
