import type { FastifyInstance } from 'fastify';
import { CreateOrganizationBody, PatchOrganizationBody } from '../../../api/schemas.ts';
import {
  createOrganization,
  deleteOrganization,
  getOrganization,
  listOrganizations,
  previewOrganizationDeletion,
  updateOrganization,
} from '../../domain/organizations.ts';
import { callerOf } from '../auth.ts';
import { parseInput, parseOptionalBody } from '../validate.ts';
import type { Params, RouteContext } from './context.ts';

/**
 * Organization routes (contract §5): `GET /organizations` → 200 `{organizations}`;
 * `POST /organizations` (`org_name`, `deletion_protection?`) → 201 Organization, 409 `conflict`;
 * `GET /organizations/{org_id}` → 200 Organization;
 * `PATCH /organizations/{org_id}` (`deletion_protection?`) → 200 Organization;
 * `DELETE /organizations/{org_id}` → 200 `{deleted: true, org_id}` (cascades), 403 `forbidden`
 * for the key's own organization, 409 `deletion_protected` or `in_use`;
 * `GET /organizations/{org_id}/deletion-preview` → 200 counts of what the DELETE would remove.
 * Every route with an id: 404 `not_found` when the organization is unknown or out of reach.
 */
export function organizationRoutes(app: FastifyInstance, { deps }: RouteContext): void {
  app.get('/organizations', async (request) => ({ organizations: await listOrganizations(deps, callerOf(request)) }));
  app.post('/organizations', async (request, reply) => {
    const body = parseInput(CreateOrganizationBody, request.body);
    return reply.code(201).send(await createOrganization(deps, callerOf(request), body));
  });
  app.get<Params<'org_id'>>('/organizations/:org_id', async (request) => getOrganization(deps, callerOf(request), request.params.org_id));
  app.patch<Params<'org_id'>>('/organizations/:org_id', async (request) => {
    const body = parseOptionalBody(PatchOrganizationBody, request.body);
    return updateOrganization(deps, callerOf(request), request.params.org_id, body);
  });
  app.delete<Params<'org_id'>>('/organizations/:org_id', async (request) => deleteOrganization(deps, callerOf(request), request.params.org_id));
  app.get<Params<'org_id'>>('/organizations/:org_id/deletion-preview', async (request) =>
    previewOrganizationDeletion(deps, callerOf(request), request.params.org_id),
  );
}
