import type { FastifyInstance } from 'fastify';
import { PutProviderKeyBody, PutVendorProviderKeyBody } from '../../../api/schemas.ts';
import { deleteProviderKey, listProviderKeys, parseProvider, putProviderKey } from '../../domain/provider-keys.ts';
import { callerOf } from '../auth.ts';
import { parseInput } from '../validate.ts';
import type { Params, RouteContext } from './context.ts';

/**
 * `PUT /organizations/{org_id}/api-keys/{provider}` (`api_key`) → 200 `{provider, key_hint,
 * updated_at}` (contract §5; also served without prefix, see app). The key needs 8 characters
 * (`PutVendorProviderKeyBody`) except for `echo` (`PutProviderKeyBody`). Errors: `invalid_request`
 * (unknown provider, bad body), `not_found`.
 */
export function putProviderKeyRoute(app: FastifyInstance, { deps }: RouteContext): void {
  app.put<Params<'org_id' | 'provider'>>('/organizations/:org_id/api-keys/:provider', async (request) => {
    const provider = parseProvider(request.params.provider);
    const body = parseInput(provider === 'echo' ? PutProviderKeyBody : PutVendorProviderKeyBody, request.body);
    return putProviderKey(deps, callerOf(request), request.params.org_id, provider, body.api_key);
  });
}

/**
 * Provider key routes (contract §5): PUT (above), `GET /organizations/{id}/api-keys` → 200
 * `{provider_keys}` (hints only), DELETE → 200 `{deleted, provider}`.
 * Errors: `invalid_request` (unknown provider), `not_found`.
 */
export function providerKeyRoutes(app: FastifyInstance, context: RouteContext): void {
  const { deps } = context;
  putProviderKeyRoute(app, context);
  app.get<Params<'org_id'>>('/organizations/:org_id/api-keys', async (request) => ({
    provider_keys: await listProviderKeys(deps, callerOf(request), request.params.org_id),
  }));
  app.delete<Params<'org_id' | 'provider'>>('/organizations/:org_id/api-keys/:provider', async (request) => {
    const provider = parseProvider(request.params.provider);
    await deleteProviderKey(deps, callerOf(request), request.params.org_id, provider);
    return { deleted: true, provider };
  });
}
