import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { AccessRequestListQuery, CreateOrgKeyBody, RejectAccessRequestBody } from '../../../api/schemas.ts';
import { ServiceError } from '../../../errors/catalogue.ts';
import { approveAccessRequest, listAccessRequests, rejectAccessRequest } from '../../domain/access-requests.ts';
import { createOrgKeyUnchecked } from '../../domain/org-keys.ts';
import { carriesSecret } from '../security-headers.ts';
import { parseInput, parseOptionalBody } from '../validate.ts';
import { OperatorSignInBody } from '../../../api/session-schemas.ts';
import { createOperatorSession, endSession, sessionTimes, type OperatorSession } from '../../sessions/sessions.ts';
import { assertCsrf, clearSessionCookie, operatorSessionOf, rememberSession, sessionOfRequest, setSessionCookie, type ConsoleSettings } from '../session-auth.ts';
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
 * The operator routes (contract §6, §10), to be registered under {@link adminPrefix} only when an
 * admin token is configured (otherwise they do not exist: 404 `route_not_found`). Every request
 * needs `Authorization: Bearer <token>` or an operator's session (the `acs_session` cookie, with
 * `X-CSRF-Token` on every change); else 401 `unauthenticated`, checked before the body:
 * `POST /sign-in` (the bearer token) → 200 OperatorSession and the session cookie;
 * `GET /session` (an operator session) → 200 OperatorSession; `POST /sign-out` → 200 `{signed_out: true}`;
 * `GET /access-requests?status=pending|approved|rejected` → 200 `{access_requests}`;
 * `POST /access-requests/{id}/approve` → 200 `{request, organization, api_key}` (the key shown once);
 * `POST /access-requests/{id}/reject` (`reason?`) → 200 the request;
 * `POST /organizations/{org_id}/keys` (`name?`, `expires_at?`) → 201 key with `api_key` (once).
 * Answers with a key or the CSRF token carry `Cache-Control: no-store` (contract §14).
 * Errors: `unauthenticated`, `csrf_failed`, `invalid_request`, `not_found`, `conflict` (decided
 * already, or a top-level organization of that name exists, with `existing_id`), `key_limit`.
 */
export function adminRoutes(app: FastifyInstance, { deps }: RouteContext, settings: ConsoleSettings): void {
  const token = settings.adminToken ?? '';
  app.addHook('onRequest', async (request) => {
    if (bearerMatches(request.headers.authorization, token)) return;
    const session = await sessionOfRequest(request, deps.db, settings);
    if (session?.kind !== 'operator') {
      throw new ServiceError('unauthenticated', 'Authorization: Bearer <admin token>, or an operator session, is required');
    }
    assertCsrf(request, session);
    rememberSession(request, session);
  });
  const operatorView = (session: OperatorSession) => ({ kind: 'operator' as const, csrf_token: session.csrfToken, ...sessionTimes(session) });
  app.post('/sign-in', carriesSecret, async (request, reply) => {
    // Only the token itself starts a session, not a session.
    if (!bearerMatches(request.headers.authorization, token)) throw new ServiceError('unauthenticated', 'Authorization: Bearer <admin token> is required to sign in');
    parseOptionalBody(OperatorSignInBody, request.body);
    const { secret, session } = await createOperatorSession(deps.db, token);
    setSessionCookie(reply, settings, secret);
    return operatorView(session);
  });
  app.get('/session', carriesSecret, async (request) => {
    const session = operatorSessionOf(request);
    if (!session) throw new ServiceError('unauthenticated', 'no operator session: sign in with POST /admin/v1/sign-in');
    return operatorView(session);
  });
  app.post('/sign-out', async (request, reply) => {
    const session = operatorSessionOf(request);
    if (session) await endSession(deps.db, session.id);
    clearSessionCookie(reply, settings);
    return { signed_out: true };
  });
  app.get('/access-requests', async (request) => {
    const query = parseInput(AccessRequestListQuery, request.query);
    return { access_requests: await listAccessRequests(deps.db, query.status) };
  });
  app.post<Params<'request_id'>>('/access-requests/:request_id/approve', carriesSecret, async (request) => approveAccessRequest(deps.db, request.params.request_id));
  app.post<Params<'request_id'>>('/access-requests/:request_id/reject', async (request) => {
    const body = parseOptionalBody(RejectAccessRequestBody, request.body);
    return rejectAccessRequest(deps.db, request.params.request_id, body.reason);
  });
  app.post<Params<'org_id'>>('/organizations/:org_id/keys', carriesSecret, async (request, reply) => {
    const body = parseOptionalBody(CreateOrgKeyBody, request.body);
    const key = await createOrgKeyUnchecked(deps.db, request.params.org_id, { name: body.name, expiresAt: body.expires_at });
    return reply.code(201).send({ org_id: request.params.org_id, ...key });
  });
}
