import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../../errors/catalogue.ts';
import type { DomainDeps } from '../domain/caller.ts';
import { claimContext, claimIdempotencyKey, hashRequestBody, releaseClaim, storeResponse, type IdempotencyTarget } from '../domain/idempotency.ts';
import { callerOf } from './auth.ts';
import { sessionScopeOf } from './session-auth.ts';

/** The request header (contract §1) and the header that marks a replayed response. */
export const idempotencyHeader = 'idempotency-key';
export const replayedHeader = 'idempotent-replayed';

interface Claim {
  target: IdempotencyTarget;
  claimId: string;
  settled: boolean;
}

const claims = new WeakMap<FastifyRequest, Claim>();

// `/v1` is an alias of `/api/v1`: one key covers a route under either prefix.
function routeOf(request: FastifyRequest): string | undefined {
  const pattern = request.routeOptions.url;
  if (pattern === undefined) return undefined;
  const unprefixed = pattern.replace(/^\/(?:api\/)?v1(?=\/)/, '');
  const params = Object.entries((request.params ?? {}) as Record<string, string>).sort(([a], [b]) => (a < b ? -1 : 1));
  return `${request.method} ${unprefixed} ${JSON.stringify(params)}`;
}

function scopeOf(request: FastifyRequest): string {
  // A console session's requests are its own: two people behind one address never share answers.
  const session = sessionScopeOf(request);
  if (session) return session;
  try {
    return callerOf(request).orgId;
  } catch {
    // Routes without an organization key (access requests, admin): scope by client address, so
    // two anonymous clients choosing the same key cannot replay or lock out each other's requests.
    return `ip:${request.ip}`;
  }
}

async function settle(deps: DomainDeps, request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<void> {
  const claim = claims.get(request);
  if (!claim || claim.settled) return;
  claim.settled = true;
  const body = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : undefined;
  try {
    // A 5xx (or a body that cannot be kept) is not an answer: release the key so a retry runs.
    if (reply.statusCode >= 500 || body === undefined) {
      await releaseClaim(deps.db, claim.target, claim.claimId);
    } else {
      const contentType = String(reply.getHeader('content-type') ?? 'application/json');
      await storeResponse(deps.db, deps.secrets, claim.target, claim.claimId, { status: reply.statusCode, contentType, body });
    }
  } catch (error) {
    // The response still goes out; the claim is taken over once abandoned (domain/idempotency.ts).
    request.log.error({ err: error }, 'could not store the idempotency record');
  }
}

/**
 * Adds `Idempotency-Key` handling (contract §1) to every POST route of `app`, including routes
 * registered later by any plugin: a `preHandler` hook validates the header (1–255 characters,
 * else 400 `invalid_request`) and claims (key, caller's organization, route) before the handler
 * runs; an `onSend` hook stores the response for 24 hours, 2xx–4xx alike, or releases the claim
 * on a 5xx. A repeat with the same body gets the stored status and body with
 * `Idempotent-Replayed: true`; another body 422 `idempotency_key_mismatch`; a repeat while the
 * first runs 409 `idempotency_key_in_use`. The handler runs inside the claim's context, so that the
 * writes it makes mark the claim committed atomically (a claim of a dead process is re-run only
 * when its work did not commit). Requests without an organization key (access
 * requests, admin routes) are scoped by the key alone; the MCP endpoint (JSON-RPC) is left out.
 * Call it before routes are registered.
 */
export function installIdempotency(app: FastifyInstance, deps: DomainDeps): void {
  // The handler of a request holding a claim runs inside `claimContext`, so that its writes mark
  // the claim committed in their own transactions (domain/idempotency.ts, `markingCommits`).
  app.addHook('onRoute', (options) => {
    const methods = [options.method].flat().map((m) => String(m).toUpperCase());
    if (!methods.includes('POST')) return;
    const handler = options.handler;
    options.handler = function (this: FastifyInstance, request, reply) {
      const claim = claims.get(request);
      return claim ? claimContext.run({ claimId: claim.claimId }, () => handler.call(this, request, reply)) : handler.call(this, request, reply);
    };
  });
  app.addHook('preHandler', async (request, reply) => {
    if (request.method !== 'POST') return;
    const header = request.headers[idempotencyHeader];
    if (header === undefined) return;
    if (typeof header !== 'string' || header.length < 1 || header.length > 255) {
      throw new ServiceError('invalid_request', 'Idempotency-Key: must be one header of 1 to 255 characters', {
        errors: [{ path: 'Idempotency-Key', message: 'must be 1 to 255 characters' }],
      });
    }
    const route = routeOf(request);
    // JSON-RPC has its own ids: the MCP endpoint and the A2A routes (whose answers are hijacked streams) keep no claim.
    if (route === undefined || route.includes(' /mcp ') || route.startsWith('POST /a2a/')) return;
    const target: IdempotencyTarget = { scope: scopeOf(request), route, key: header };
    const outcome = await claimIdempotencyKey(deps.db, deps.secrets, target, hashRequestBody(request.body), deps.instanceId);
    if (outcome.kind === 'replay') {
      return reply.code(outcome.status).header(replayedHeader, 'true').header('content-type', outcome.contentType).send(outcome.body);
    }
    claims.set(request, { target, claimId: outcome.claimId, settled: false });
  });
  app.addHook('onSend', async (request, reply, payload) => {
    await settle(deps, request, reply, payload);
    return payload;
  });
  // A request that ends without sending (hijacked, aborted) must not hold its key until abandoned.
  app.addHook('onResponse', async (request, reply) => {
    await settle(deps, request, reply, undefined);
  });
}
