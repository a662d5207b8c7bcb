/**
 * The A2A server of acs-server (contract §12): `@a2a-js/sdk`'s own HTTP handlers — its JSON-RPC
 * and HTTP+JSON transports and its Agent Card handler, each with the SDK's A2A 0.3 compatibility
 * on — over the request handler of this service (request-handler.ts), in one Express app that
 * routes.ts hands each A2A request to, after the service's own checks (the MCP key, the edge).
 *
 * Every agent answers at `/a2a/v1/agents/{agent_id}` (api/a2a.ts):
 * - `POST` at that URL: JSON-RPC 2.0 (A2A v1.0 §9; `SendMessage`, `SendStreamingMessage`,
 *   `GetTask`, `ListTasks`, `CancelTask`, `SubscribeToTask`, …, and A2A 0.3's `message/send`,
 *   `message/stream`, `tasks/get`, `tasks/cancel`, `tasks/resubscribe`);
 * - under it, HTTP+JSON as the SDK lays it out (A2A v1.0 §11: `POST /message:send`,
 *   `POST /message:stream`, `GET /tasks/{id}`, `GET /tasks`, `POST /tasks/{id}:cancel`,
 *   `POST /tasks/{id}:subscribe`; A2A 0.3's under `/v1/`);
 * - `GET /.well-known/agent-card.json`: the agent's card (card.ts), as A2A 1.0 or, for a client
 *   asking for 0.3 (`A2A-Version`, absent means 0.3), as the SDK translates it.
 *
 * Loaded at the first A2A request (routes.ts), so a server nobody calls over A2A never loads the SDK
 * or Express.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import { AgentCard } from '@a2a-js/sdk';
import { agentCardHandler, jsonRpcHandler, restHandler } from '@a2a-js/sdk/server/express';
import { a2aAgentsPath, agentCardPath } from '../../api/a2a.ts';
import type { DomainDeps } from '../domain/caller.ts';
import type { WebhookRuntime } from '../events/webhooks/webhooks.ts';
import { getAgent } from '../domain/participants.ts';
import { domainCaller, type A2aCaller } from './a2a-caller.ts';
import { defaultBlockingWaitMs } from './agent-executor.ts';
import { A2aUser, unreachableMessage } from './call-context.ts';
import { buildAgentCard } from './card.ts';
import { EdgeRequestHandler } from './request-handler.ts';

/** One A2A request as routes.ts hands it over: who calls (checked), and the signal that ends its waits. */
export interface A2aRequestState {
  caller: A2aCaller;
  signal: AbortSignal;
}

/** Options of {@link createA2aServer}. */
export interface A2aServerOptions {
  deps: DomainDeps;
  /** The URL the server is reached at (cards, attachment URLs), read at each request. */
  publicUrl: () => string;
  /** The webhook worker, told of a new push-notification config (push-configs.ts); absent: it finds it at its next look. */
  webhooks?: WebhookRuntime | undefined;
  /** How long a blocking `SendMessage` waits; default {@link defaultBlockingWaitMs}. */
  blockingWaitMs?: number | undefined;
  /** Told of errors that escaped the SDK's handling (a bug, storage trouble); default silent. */
  logError?: ((error: unknown) => void) | undefined;
}

/** The A2A server of one process. */
export interface A2aServer {
  /**
   * Answers one A2A request on its raw request and response (whose body the caller may have
   * parsed already: `req.body`), as `state`'s caller. Resolves when the response is finished or
   * its connection closed.
   */
  handle(req: IncomingMessage & { body?: unknown }, res: ServerResponse, state: A2aRequestState): Promise<void>;
}

/** A card whose JSON is the SDK's JSON form of it (see {@link cardRoute}). */
function withJsonForm(card: AgentCard): AgentCard {
  Object.defineProperty(card, 'toJSON', { value: () => AgentCard.toJSON(card), enumerable: false });
  return card;
}

/** An A2A HTTP+JSON error body (A2A v1.0 §11.6, `google.rpc.Status`) for what the app answers itself. */
function errorBody(code: number, status: string, message: string): Record<string, unknown> {
  return { error: { code, status, message, details: [] } };
}

/** Creates the A2A server of a process over `options.deps`. */
export function createA2aServer(options: A2aServerOptions): A2aServer {
  const states = new WeakMap<IncomingMessage, A2aRequestState>();
  const env = { deps: options.deps, publicUrl: options.publicUrl, blockingWaitMs: options.blockingWaitMs ?? defaultBlockingWaitMs, webhooks: options.webhooks };
  // The card the SDK checks requests against (capabilities, protocol versions per binding): every
  // agent's card has the same of these; each agent's own card is served by cardRoute below.
  const template = buildAgentCard(
    { agent_id: '00000000-0000-0000-0000-000000000000', team_id: '', name: 'agent', provider: null, model: null, description: '', instructions: '', status: 'active', max_tokens_per_day: null, max_steps: 10, deletion_protection: false, tools: null, created_at: '' },
    options.publicUrl(),
  );
  const requestHandler = new EdgeRequestHandler(env, template);
  const userBuilder = async (req: Request) => {
    const state = states.get(req);
    if (!state) throw new Error('A2A: a request reached the SDK without the service\'s checks');
    return new A2aUser(state.caller, state.signal);
  };
  const legacyCompat = { enabled: true };
  const jsonRpc = jsonRpcHandler({ requestHandler, userBuilder, legacyCompat });
  const rest = restHandler({ requestHandler, userBuilder, legacyCompat });

  /**
   * The agent's card, for a caller that shares an edge with it (404 otherwise, as for an agent
   * that does not exist), through the SDK's card handler (A2A-Version negotiation, ETag). The SDK
   * 1.3.0 handler writes `JSON.stringify(card)` for A2A 1.0, and the card in memory is not its JSON
   * form where it has a choice of fields (the security scheme): the card carries its JSON form
   * (`toJSON`, the SDK's serializer) so that both versions come out right.
   */
  const cardRoute = async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    try {
      const caller = states.get(req)!.caller;
      if (caller.edgeId === null) {
        res.status(404).json(errorBody(404, 'NOT_FOUND', unreachableMessage));
        return;
      }
      const agent = await getAgent(options.deps, domainCaller(caller), caller.agentId);
      const card = withJsonForm(buildAgentCard(agent, options.publicUrl()));
      // The card is for callers with a key: no shared cache may keep it (maxAge 0: no-cache).
      agentCardHandler({ agentCardProvider: async () => card, legacyCompat, cache: { maxAge: 0 } })(req, res, next);
    } catch (error) {
      next(error);
    }
  };

  const app = express();
  app.disable('x-powered-by');
  const agentPath = `${a2aAgentsPath}/:agentId`;
  app.use(`${agentPath}/${agentCardPath}`, cardRoute);
  // JSON-RPC is a POST to the agent's URL itself; everything else under it is HTTP+JSON.
  app.use(agentPath, (req, res, next) => (req.method === 'POST' && req.path === '/' ? jsonRpc(req, res, next) : next()));
  app.use(agentPath, rest);
  app.use((_req: Request, res: Response) => {
    res.status(404).json(errorBody(404, 'NOT_FOUND', 'no A2A operation at this path (see the agent card for its interfaces)'));
  });
  // What escaped the SDK's own handling: a bug or storage trouble, answered without its details.
  app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    options.logError?.(error);
    if (res.headersSent) {
      res.end();
      return;
    }
    const unavailable = error instanceof Error && /unreachable|ECONNREFUSED|terminat/i.test(error.message);
    res.status(unavailable ? 503 : 500).json(errorBody(unavailable ? 503 : 500, unavailable ? 'UNAVAILABLE' : 'INTERNAL', unavailable ? 'storage is unreachable' : 'internal error'));
  });

  return {
    handle(req, res, state) {
      states.set(req, state);
      return new Promise<void>((resolve) => {
        res.once('close', resolve);
        app(req as Request, res as Response);
      });
    },
  };
}
