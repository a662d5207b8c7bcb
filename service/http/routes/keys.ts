import type { FastifyInstance } from 'fastify';
import { CreateOrgKeyBody, RotateOrgKeyBody } from '../../../api/schemas.ts';
import { createOrgKey, listOrgKeys, revokeOrgKey, rotateOrgKey } from '../../domain/org-keys.ts';
import { callerOf } from '../auth.ts';
import { carriesSecret } from '../security-headers.ts';
import { parseOptionalBody } from '../validate.ts';
import type { Params, RouteContext } from './context.ts';

/** Default grace period of a rotation: one day, in seconds (contract §5). */
const defaultGraceSeconds = 86_400;

/**
 * Organization key routes (contract §3, §5):
 * `POST /organizations/{org_id}/keys` (`name?`, `expires_at?`) → 201 key with `api_key` (only here);
 * `GET /organizations/{org_id}/keys` → 200 `{keys}` (active keys, no secrets);
 * `POST /organizations/{org_id}/keys/{key_id}/rotate` (`grace_seconds?`, default 86400, 0–2592000)
 * → 201 new key with `api_key`, the old key expires after the grace (0: revoked at once);
 * `DELETE /organizations/{org_id}/keys/{key_id}` → 200 `{revoked: true, key_id}`.
 * Answers with a secret carry `Cache-Control: no-store` (contract §14).
 * Errors: `invalid_request`, `not_found`, `key_limit`, `last_key`.
 */
export function orgKeyRoutes(app: FastifyInstance, { deps }: RouteContext): void {
  app.post<Params<'org_id'>>('/organizations/:org_id/keys', carriesSecret, async (request, reply) => {
    const body = parseOptionalBody(CreateOrgKeyBody, request.body);
    const key = await createOrgKey(deps.db, callerOf(request), request.params.org_id, { name: body.name, expiresAt: body.expires_at });
    return reply.code(201).send(key);
  });
  app.get<Params<'org_id'>>('/organizations/:org_id/keys', async (request) => ({
    keys: await listOrgKeys(deps.db, callerOf(request), request.params.org_id),
  }));
  app.post<Params<'org_id' | 'key_id'>>('/organizations/:org_id/keys/:key_id/rotate', carriesSecret, async (request, reply) => {
    const body = parseOptionalBody(RotateOrgKeyBody, request.body);
    const { org_id, key_id } = request.params;
    const key = await rotateOrgKey(deps.db, callerOf(request), org_id, key_id, body.grace_seconds ?? defaultGraceSeconds);
    return reply.code(201).send(key);
  });
  app.delete<Params<'org_id' | 'key_id'>>('/organizations/:org_id/keys/:key_id', async (request) => {
    await revokeOrgKey(deps.db, callerOf(request), request.params.org_id, request.params.key_id);
    return { revoked: true, key_id: request.params.key_id };
  });
}
