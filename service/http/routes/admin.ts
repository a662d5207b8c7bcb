import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { AccessRequestListQuery, CreateOrgKeyBody, RejectAccessRequestBody } from '../../../api/schemas.ts';
import { ServiceError } from '../../../errors/catalogue.ts';
import { approveAccessRequest, listAccessRequests, rejectAccessRequest } from '../../domain/access-requests.ts';
import { createOrgKeyUnchecked } from '../../domain/org-keys.ts';
import { parseInput, parseOptionalBody } from '../validate.ts';
import type { Params, RouteContext } from './context.ts';

/** Where the operator routes live; they are not under `/api/v1` (contract §6). */
export const adminPrefix = '/admin/v1';

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/**
 * Whether `header` is `Bearer <token>`. Both sides are hashed first so that the comparison is
 * constant-time whatever their lengths, and the token's length does not leak either.
 */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  const sent = match?.[1] ?? '';
  return timingSafeEqual(digest(sent), digest(token));
}

/**
 * The operator routes (contract §6), to be registered under {@link adminPrefix} only when an
 * admin token is configured (otherwise they do not exist: 404 `route_not_found`). Every request
 * needs `Authorization: Bearer <token>` (else 401 `unauthenticated`, checked before the body):
 * `GET /access-requests?status=pending|approved|rejected` → 200 `{access_requests}`;
 * `POST /access-requests/{id}/approve` → 200 `{request, organization, api_key}` (the key shown once);
 * `POST /access-requests/{id}/reject` (`reason?`) → 200 the request;
 * `POST /organizations/{org_id}/keys` (`name?`, `expires_at?`) → 201 key with `api_key` (once).
 * Errors: `unauthenticated`, `invalid_request`, `not_found`, `conflict` (decided already, or a
 * top-level organization of that name exists, with `existing_id`), `key_limit`.
 */
export function adminRoutes(app: FastifyInstance, { deps }: RouteContext, token: string): void {
  app.addHook('onRequest', async (request) => {
    if (!bearerMatches(request.headers.authorization, token)) {
      throw new ServiceError('unauthenticated', 'Authorization: Bearer <admin token> is required');
    }
  });
  app.get('/access-requests', async (request) => {
    const query = parseInput(AccessRequestListQuery, request.query);
    return { access_requests: await listAccessRequests(deps.db, query.status) };
  });
  app.post<Params<'request_id'>>('/access-requests/:request_id/approve', async (request) => approveAccessRequest(deps.db, request.params.request_id));
  app.post<Params<'request_id'>>('/access-requests/:request_id/reject', async (request) => {
    const body = parseOptionalBody(RejectAccessRequestBody, request.body);
    return rejectAccessRequest(deps.db, request.params.request_id, body.reason);
  });
  app.post<Params<'org_id'>>('/organizations/:org_id/keys', async (request, reply) => {
    const body = parseOptionalBody(CreateOrgKeyBody, request.body);
    const key = await createOrgKeyUnchecked(deps.db, request.params.org_id, { name: body.name, expiresAt: body.expires_at });
    return reply.code(201).send({ org_id: request.params.org_id, ...key });
  });
}
