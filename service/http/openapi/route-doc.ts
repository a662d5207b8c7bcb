import type { z } from 'zod';

/** Who may call a route: which credential the OpenAPI document names for it. */
export const Securities = { orgKey: 'orgKey', mcpKey: 'mcpKey', adminToken: 'adminToken', none: 'none' } as const;
export type Security = (typeof Securities)[keyof typeof Securities];

/**
 * What the OpenAPI document says about one route beyond its method and path. Routes carry it in
 * their Fastify `config.openapi` (`app.post(url, { config: { openapi: {...} } }, handler)`), or
 * {@link ./route-docs.ts} holds it; either way the schemas are the Zod schemas the handler
 * validates with, so the document cannot drift from what the server accepts.
 */
export interface RouteDoc {
  summary?: string;
  /** The JSON request body the handler parses. */
  body?: z.ZodType;
  /** The query string the handler parses (an object schema: one parameter per key). */
  query?: z.ZodObject;
  /** Path parameters that are not UUIDs (default: a UUID for every `:param`). */
  params?: Record<string, z.ZodType>;
  /** The success response: status and JSON schema, or another content type (bytes). */
  success?: { status: number; schema?: z.ZodType; contentType?: string; description?: string };
  /** Overrides the credential derived from the path. */
  security?: Security;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** OpenAPI description of the route (service/http/openapi). */
    openapi?: RouteDoc;
  }
}
