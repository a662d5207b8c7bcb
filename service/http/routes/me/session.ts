import type { FastifyInstance } from 'fastify';
import { describePerson } from '../../../domain/person-reach.ts';
import { endSession, sessionTimes } from '../../../sessions/sessions.ts';
import { clearSessionCookie, personSessionOf, type ConsoleSettings } from '../../session-auth.ts';
import type { RouteContext } from '../context.ts';
import { carriesSecret } from '../../security-headers.ts';

/**
 * `GET /me` → 200 Me: the session's humans with their teams and organizations, the CSRF token
 * and when the session ends (contract §10), with `Cache-Control: no-store` (§14). `POST /me/sign-out` → 200 `{signed_out: true}`:
 * ends the session at once and clears the cookie. Errors: `unauthenticated`, `csrf_failed`.
 */
export function meSessionRoutes(app: FastifyInstance, { deps }: RouteContext, settings: ConsoleSettings): void {
  app.get('/me', carriesSecret, async (request) => {
    const session = personSessionOf(request);
    const humans = await describePerson(deps.db, { humanIds: session.humanIds });
    return {
      kind: 'person',
      method: session.method === 'oidc' ? 'oidc' : 'link',
      email: session.email,
      humans,
      csrf_token: session.csrfToken,
      ...sessionTimes(session),
    };
  });
  app.post('/me/sign-out', async (request, reply) => {
    const session = personSessionOf(request);
    await endSession(deps.db, session.id);
    clearSessionCookie(reply, settings);
    return { signed_out: true };
  });
}
