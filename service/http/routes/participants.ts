import type { FastifyInstance } from 'fastify';
import { CreateAgentBody, CreateHumanBody, PatchAgentBody, PatchHumanBody } from '../../../api/schemas.ts';
import {
  createAgent,
  createHuman,
  deleteParticipant,
  getAgent,
  getHuman,
  listAgents,
  listHumans,
  updateAgent,
  updateHuman,
} from '../../domain/participants.ts';
import { callerOf } from '../auth.ts';
import { parseInput, parseOptionalBody } from '../validate.ts';
import type { Params, RouteContext } from './context.ts';

/**
 * Agent and human routes (contract §5): create/list under a team (201 / 200 `{agents}`,
 * `{humans}`), GET/PATCH/DELETE by id (DELETE → 200 `{deleted, agent_id|human_id}`).
 * Errors: `not_found`, `conflict` (name taken among agents and humans), `deletion_protected`
 * (DELETE while `deletion_protection` is true), `in_use` (DELETE while on an edge), `invalid_request`.
 */
export function participantRoutes(app: FastifyInstance, { deps }: RouteContext): void {
  app.post<Params<'team_id'>>('/teams/:team_id/agents', async (request, reply) => {
    const body = parseInput(CreateAgentBody, request.body);
    return reply.code(201).send(await createAgent(deps, callerOf(request), request.params.team_id, body));
  });
  app.get<Params<'team_id'>>('/teams/:team_id/agents', async (request) => ({
    agents: await listAgents(deps, callerOf(request), request.params.team_id),
  }));
  app.get<Params<'agent_id'>>('/agents/:agent_id', async (request) => getAgent(deps, callerOf(request), request.params.agent_id));
  app.patch<Params<'agent_id'>>('/agents/:agent_id', async (request) => {
    const body = parseOptionalBody(PatchAgentBody, request.body);
    return updateAgent(deps, callerOf(request), request.params.agent_id, body);
  });
  app.delete<Params<'agent_id'>>('/agents/:agent_id', async (request) => {
    await deleteParticipant(deps, callerOf(request), 'agent', request.params.agent_id);
    return { deleted: true, agent_id: request.params.agent_id };
  });

  app.post<Params<'team_id'>>('/teams/:team_id/humans', async (request, reply) => {
    const body = parseInput(CreateHumanBody, request.body);
    return reply.code(201).send(await createHuman(deps, callerOf(request), request.params.team_id, body));
  });
  app.get<Params<'team_id'>>('/teams/:team_id/humans', async (request) => ({
    humans: await listHumans(deps, callerOf(request), request.params.team_id),
  }));
  app.get<Params<'human_id'>>('/humans/:human_id', async (request) => getHuman(deps, callerOf(request), request.params.human_id));
  app.patch<Params<'human_id'>>('/humans/:human_id', async (request) => {
    const body = parseOptionalBody(PatchHumanBody, request.body);
    return updateHuman(deps, callerOf(request), request.params.human_id, body);
  });
  app.delete<Params<'human_id'>>('/humans/:human_id', async (request) => {
    await deleteParticipant(deps, callerOf(request), 'human', request.params.human_id);
    return { deleted: true, human_id: request.params.human_id };
  });
}
