import type { FastifyInstance } from 'fastify';
import { buildOpenApiDocument, type CollectedRoute } from './document.ts';

/** Where the document is served (contract §6); no key needed. */
export const openApiPaths = ['/api/v1/openapi.json', '/v1/openapi.json'] as const;

/**
 * Collects every route `app` registers from now on (Fastify's `onRoute` hook, so routes added by
 * any plugin are included, with the `config.openapi` they carry) and serves the OpenAPI 3.1
 * document of them at {@link openApiPaths} without an API key. Call it before any route is
 * registered. The document is built on the first request, once every route exists, and cached.
 */
export function installOpenApi(app: FastifyInstance): void {
  const routes: CollectedRoute[] = [];
  app.addHook('onRoute', (route) => {
    for (const method of Array.isArray(route.method) ? route.method : [route.method]) {
      routes.push({ method: String(method).toUpperCase(), url: route.url, doc: route.config?.openapi });
    }
  });
  let document: string | undefined;
  for (const path of openApiPaths) {
    app.get(path, { config: { openapi: { summary: 'This OpenAPI 3.1 document', security: 'none' } } }, async (_request, reply) => {
      document ??= JSON.stringify(buildOpenApiDocument(routes, '1.0.0'));
      return reply.type('application/json').send(document);
    });
  }
}
