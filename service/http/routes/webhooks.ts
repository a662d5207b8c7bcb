import type { FastifyInstance } from 'fastify';
import { CreateWebhookBody, DeliveryListQuery, PatchWebhookBody, RotateWebhookSecretBody } from '../../../api/events.ts';
import {
  createWebhook,
  deleteWebhook,
  getWebhook,
  listDeliveries,
  listWebhooks,
  retryDelivery,
  rotateWebhookSecret,
  updateWebhook,
} from '../../events/webhooks/webhooks.ts';
import { callerOf } from '../auth.ts';
import { carriesSecret } from '../security-headers.ts';
import { parseInput, parseOptionalBody } from '../validate.ts';
import type { Params, RouteContext } from './context.ts';

/**
 * Webhook routes (contract §9): `POST`/`GET /organizations/{org_id}/webhooks`,
 * `GET`/`PATCH`/`DELETE /webhooks/{webhook_id}`, `POST /webhooks/{webhook_id}/rotate-secret`,
 * `GET /webhooks/{webhook_id}/deliveries` and `POST
 * /webhooks/{webhook_id}/deliveries/{delivery_id}/retry` (202). Creation and rotation answer the
 * secret, with `Cache-Control: no-store`.
 * Errors: `not_found`, `invalid_request`, `invalid_cursor`, `webhook_url_refused` (400),
 * `webhook_limit` (409).
 */
export function webhookRoutes(app: FastifyInstance, { deps, webhooks }: RouteContext): void {
  app.post<Params<'org_id'>>('/organizations/:org_id/webhooks', carriesSecret, async (request, reply) => {
    const body = parseInput(CreateWebhookBody, request.body);
    return reply.code(201).send(await createWebhook(deps, webhooks, callerOf(request), request.params.org_id, body));
  });
  app.get<Params<'org_id'>>('/organizations/:org_id/webhooks', async (request) => ({
    webhooks: await listWebhooks(deps, callerOf(request), request.params.org_id),
  }));
  app.get<Params<'webhook_id'>>('/webhooks/:webhook_id', async (request) => getWebhook(deps, callerOf(request), request.params.webhook_id));
  app.patch<Params<'webhook_id'>>('/webhooks/:webhook_id', async (request) => {
    const body = parseInput(PatchWebhookBody, request.body);
    return updateWebhook(deps, webhooks, callerOf(request), request.params.webhook_id, body);
  });
  app.delete<Params<'webhook_id'>>('/webhooks/:webhook_id', async (request) => deleteWebhook(deps, callerOf(request), request.params.webhook_id));
  app.post<Params<'webhook_id'>>('/webhooks/:webhook_id/rotate-secret', carriesSecret, async (request) => {
    const body = parseOptionalBody(RotateWebhookSecretBody, request.body);
    return rotateWebhookSecret(deps, callerOf(request), request.params.webhook_id, body);
  });
  app.get<Params<'webhook_id'> & { Querystring: Record<string, unknown> }>('/webhooks/:webhook_id/deliveries', async (request) => {
    const query = parseInput(DeliveryListQuery, request.query);
    return listDeliveries(deps, callerOf(request), request.params.webhook_id, query);
  });
  app.post<Params<'webhook_id' | 'delivery_id'>>('/webhooks/:webhook_id/deliveries/:delivery_id/retry', async (request, reply) =>
    reply.code(202).send(await retryDelivery(deps, webhooks, callerOf(request), request.params.webhook_id, request.params.delivery_id)),
  );
}
