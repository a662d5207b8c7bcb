import type { FastifyInstance } from 'fastify';
import { CreateTeamBody, PatchTeamBody } from '../../../api/schemas.ts';
import { getTeamGraph } from '../../domain/team-graph.ts';
import { createTeam, deleteTeam, listTeams, previewTeamDeletion, updateTeam } from '../../domain/teams.ts';
import { callerOf } from '../auth.ts';
import { parseInput, parseOptionalBody } from '../validate.ts';
import type { Params, RouteContext } from './context.ts';

/**
 * Team routes (contract §5): create/list under an organization (201 Team / 200 `{teams}`),
 * `GET /teams/{id}` (Team with graph), PATCH (200 Team), DELETE (200 `{deleted, team_id}`,
 * cascades) and `GET /teams/{id}/deletion-preview` (counts, and what is protected).
 * Errors: `not_found`, `conflict`, `invalid_request`, `deletion_protected` (DELETE of a team that
 * is, or holds an agent or human that is, protected).
 */
export function teamRoutes(app: FastifyInstance, { deps }: RouteContext): void {
  app.post<Params<'org_id'>>('/organizations/:org_id/teams', async (request, reply) => {
    const body = parseInput(CreateTeamBody, request.body);
    return reply.code(201).send(await createTeam(deps, callerOf(request), request.params.org_id, body));
  });
  app.get<Params<'org_id'>>('/organizations/:org_id/teams', async (request) => ({
    teams: await listTeams(deps, callerOf(request), request.params.org_id),
  }));
  app.get<Params<'team_id'>>('/teams/:team_id', async (request) => getTeamGraph(deps, callerOf(request), request.params.team_id));
  app.patch<Params<'team_id'>>('/teams/:team_id', async (request) => {
    const body = parseOptionalBody(PatchTeamBody, request.body);
    return updateTeam(deps, callerOf(request), request.params.team_id, body);
  });
  app.delete<Params<'team_id'>>('/teams/:team_id', async (request) => deleteTeam(deps, callerOf(request), request.params.team_id));
  app.get<Params<'team_id'>>('/teams/:team_id/deletion-preview', async (request) =>
    previewTeamDeletion(deps, callerOf(request), request.params.team_id),
  );
}
