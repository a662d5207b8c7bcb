import type { FastifyInstance } from 'fastify';
import { CreateOrganizationBody } from '../../../api/schemas.ts';
import { createOrganization, getOrganization, listOrganizations } from '../../domain/organizations.ts';
import { callerOf } from '../auth.ts';
import { parseInput } from '../validate.ts';
import type { Params, RouteContext } from './context.ts';

/**
 * Organization routes (contract §5): `GET /organizations` → 200 `{organizations}`;
 * `POST /organizations` (`org_name`) → 201 Organization, 409 `conflict`;
 * `GET /organizations/{org_id}` → 200 Organization, 404 `not_found`.
 */
export function organizationRoutes(app: FastifyInstance, { deps }: RouteContext): void {
  app.get('/organizations', async (request) => ({ organizations: await listOrganizations(deps, callerOf(request)) }));
  app.post('/organizations', async (request, reply) => {
    const body = parseInput(CreateOrganizationBody, request.body);
    return reply.code(201).send(await createOrganization(deps, callerOf(request), body.org_name));
  });
  app.get<Params<'org_id'>>('/organizations/:org_id', async (request) => getOrganization(deps, callerOf(request), request.params.org_id));
}
