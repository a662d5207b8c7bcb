/**
 * The session-authenticated routes of the console (contract §10), under `/api/v1/me` (and the
 * `/v1` alias). A person's session reaches these and nothing else: every route takes the
 * session's humans from the cookie, never from the request, and answers `not_found` for
 * anything outside their reach. Every request that changes something carries `X-CSRF-Token`.
 */
import type { FastifyInstance } from 'fastify';
import type { RouteContext } from '../context.ts';
import { requireSession, type ConsoleSettings } from '../../session-auth.ts';
import { meAgentKeyRoutes } from './agent-keys.ts';
import { meEventRoutes } from './events.ts';
import { meSessionRoutes } from './session.ts';
import { meTeamRoutes } from './teams.ts';
import { meThreadRoutes } from './threads.ts';
import { meThreadStreamRoutes } from '../thread-streams.ts';

/** Where the person's routes live, under each API prefix. */
export const mePath = '/me';

/**
 * Registers the person's routes on `app` (an encapsulated plugin under an API prefix): the
 * session hook first, then `GET /me` and sign-out, the teams, the threads and edges, the MCP
 * keys of external agents, and the event stream of the person's threads. Errors of every route: `unauthenticated` (no live session),
 * `csrf_failed` (a change without the CSRF token), `not_found` (outside the person's reach).
 */
export function meRoutes(app: FastifyInstance, context: RouteContext, settings: ConsoleSettings): void {
  requireSession(app, context.deps.db, settings, 'person');
  meSessionRoutes(app, context, settings);
  meTeamRoutes(app, context);
  meThreadRoutes(app, context);
  meThreadStreamRoutes(app, context);
  meAgentKeyRoutes(app, context);
  meEventRoutes(app, context, settings);
}
