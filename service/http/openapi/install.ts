import type { FastifyInstance } from 'fastify';
import { buildOpenApiDocument } from './document.ts';
import type { RouteRegistry } from './route-registry.ts';

/** Where the document is served, under each API prefix (contract §6). */
export const openApiPath = '/openapi.json';

/**
 * Serves the OpenAPI 3.1 document of every route in `registry` at `/openapi.json` under each of
 * its API prefixes (`/api/v1/openapi.json`, `/v1/openapi.json`; contract §6), without an API
 * key. The document is built on the first request, once every route exists, and cached.
 * Errors: 500 `internal` if the document cannot be built (two schemas with one name: a bug).
 */
export function installOpenApi(app: FastifyInstance, registry: RouteRegistry): void {
  let document: string | undefined;
  for (const prefix of registry.prefixes) {
    app.get(`${prefix}${openApiPath}`, async (_request, reply) => {
      document ??= JSON.stringify(buildOpenApiDocument(registry, '1.0.0'));
      return reply.type('application/json').send(document);
    });
  }
}
