import type { FastifyInstance } from 'fastify';
import { CreateEdgeBody } from '../../../api/schemas.ts';
import { createEdge, deleteEdge, getEdge, listEdges } from '../../domain/edges.ts';
import { callerOf } from '../auth.ts';
import { parseInput } from '../validate.ts';
import type { Params, RouteContext } from './context.ts';

/**
 * Edge routes (contract §5): create/list under a team (201 Edge / 200 `{edges}`), GET and DELETE
 * by id (DELETE → 200 `{deleted, edge_id}`, cascades to threads and messages).
 * Errors: `not_found`, `conflict` (pair exists), `unknown_reference` (participant not in team),
 * `invalid_request`.
 */
export function edgeRoutes(app: FastifyInstance, { deps }: RouteContext): void {
  app.post<Params<'team_id'>>('/teams/:team_id/edges', async (request, reply) => {
    const body = parseInput(CreateEdgeBody, request.body);
    return reply.code(201).send(await createEdge(deps, callerOf(request), request.params.team_id, body.participants));
  });
  app.get<Params<'team_id'>>('/teams/:team_id/edges', async (request) => ({
    edges: await listEdges(deps, callerOf(request), request.params.team_id),
  }));
  app.get<Params<'edge_id'>>('/edges/:edge_id', async (request) => getEdge(deps.db, callerOf(request), request.params.edge_id));
  app.delete<Params<'edge_id'>>('/edges/:edge_id', async (request) => {
    await deleteEdge(deps, callerOf(request), request.params.edge_id);
    return { deleted: true, edge_id: request.params.edge_id };
  });
}
