import type { FastifyInstance } from 'fastify';
import { CreateAccessRequestBody } from '../../../api/schemas.ts';
import { submitAccessRequest } from '../../domain/access-requests.ts';
import { parseInput } from '../validate.ts';
import type { RouteContext } from './context.ts';

/**
 * `POST /access-requests` (`email`, `org_name`, `intended_use` 1–2000 characters; no API key) →
 * 202 `{request_id, status: "pending"}` (contract §5); the operator reviews it (§6).
 * Errors: `invalid_request`. Register it outside the API-key hook.
 */
export function accessRequestRoutes(app: FastifyInstance, { deps }: RouteContext): void {
  app.post('/access-requests', async (request, reply) => {
    const body = parseInput(CreateAccessRequestBody, request.body);
    return reply.code(202).send(await submitAccessRequest(deps.db, body));
  });
}
