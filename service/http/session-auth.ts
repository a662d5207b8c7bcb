/**
 * Console sessions at the HTTP edge (contract §10): the `acs_session` cookie (HttpOnly,
 * SameSite=Lax, path `/`, `Secure` when the public URL is https), the hook that resolves it on
 * the session-authenticated routes, and the CSRF rule: a request that may change something
 * (any method but GET, HEAD and OPTIONS) must carry `X-CSRF-Token` equal to the session's token.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../../errors/catalogue.ts';
import type { Queryable } from '../storage/db.ts';
import { findSession, sameText, sessionCookieName, sessionLifetimeMs, type OperatorSession, type PersonSession, type Session } from '../sessions/sessions.ts';

/** How the console is reached from outside, and so how its cookies and links are made. */
export interface ConsoleSettings {
  /** The console's absolute base URL without a trailing slash (`--public-url`, else the listen address). */
  publicUrl(): string;
  /** The admin token of the operator routes, when set. */
  adminToken: string | undefined;
}

const sessions = new WeakMap<FastifyRequest, Session>();

/** Methods that change nothing (RFC 9110 §9.2.1) and so need no CSRF token. */
const safeMethods = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The session cookie's attributes (contract §10); `Secure` exactly when the public URL is https. */
function cookieOptions(settings: ConsoleSettings) {
  return {
    path: '/',
    httpOnly: true,
    sameSite: 'lax' as const,
    secure: settings.publicUrl().startsWith('https:'),
  };
}

/** Sets the session cookie to `secret`, for as long as the session can live at most (7 days). */
export function setSessionCookie(reply: FastifyReply, settings: ConsoleSettings, secret: string): void {
  reply.setCookie(sessionCookieName, secret, { ...cookieOptions(settings), maxAge: Math.floor(sessionLifetimeMs / 1000) });
}

/** Tells the browser to forget the session cookie. */
export function clearSessionCookie(reply: FastifyReply, settings: ConsoleSettings): void {
  reply.clearCookie(sessionCookieName, cookieOptions(settings));
}

/**
 * Adds an `onRequest` hook to the routes of `app` (an encapsulated plugin) that resolves the
 * session cookie before the body is read and checks the CSRF token of every request that may
 * change something. `kind` is the kind of session these routes take: a person's (`/api/v1/me`)
 * or an operator's (`/admin/v1`). Errors: `unauthenticated` (no live session of that kind),
 * `csrf_failed` (403: `X-CSRF-Token` missing or not the session's).
 */
export function requireSession(app: FastifyInstance, db: Queryable, settings: ConsoleSettings, kind: Session['kind']): void {
  app.addHook('onRequest', async (request) => {
    const session = await sessionOfRequest(request, db, settings);
    if (!session || session.kind !== kind) {
      throw new ServiceError('unauthenticated', kind === 'person' ? 'sign in to the console first: no live session' : 'sign in as an operator first: no live operator session');
    }
    assertCsrf(request, session);
    sessions.set(request, session);
  });
}

/** The live session named by the request's cookie, if any (no CSRF check). */
export async function sessionOfRequest(request: FastifyRequest, db: Queryable, settings: ConsoleSettings): Promise<Session | undefined> {
  const secret = request.cookies[sessionCookieName];
  return secret ? findSession(db, secret, { adminToken: settings.adminToken }) : undefined;
}

/**
 * Refuses a request that may change something without the session's CSRF token in
 * `X-CSRF-Token`. Errors: `csrf_failed`.
 */
export function assertCsrf(request: FastifyRequest, session: Session): void {
  if (safeMethods.has(request.method)) return;
  const header = request.headers['x-csrf-token'];
  const sent = Array.isArray(header) ? header[0] : header;
  if (!sent || !sameText(sent, session.csrfToken)) {
    throw new ServiceError('csrf_failed', 'X-CSRF-Token must be the session\'s CSRF token (GET /api/v1/me gives it) on every request that changes something');
  }
}

/** Records the session a request was authenticated with (routes that check it themselves). */
export function rememberSession(request: FastifyRequest, session: Session): void {
  sessions.set(request, session);
}

/** The person's session of `request`. Errors: `unauthenticated` on a route without the hook. */
export function personSessionOf(request: FastifyRequest): PersonSession {
  const session = sessions.get(request);
  if (!session || session.kind !== 'person') throw new ServiceError('unauthenticated', 'sign in to the console first: no live session');
  return session;
}

/** The operator's session of `request`, if it was authenticated by one. */
export function operatorSessionOf(request: FastifyRequest): OperatorSession | undefined {
  const session = sessions.get(request);
  return session?.kind === 'operator' ? session : undefined;
}

/**
 * The scope of a session's Idempotency-Key records (http/idempotency.ts): its own session, so
 * two people behind one address never see each other's stored answers. Undefined without one.
 */
export function sessionScopeOf(request: FastifyRequest): string | undefined {
  const session = sessions.get(request);
  return session ? `session:${session.id}` : undefined;
}
