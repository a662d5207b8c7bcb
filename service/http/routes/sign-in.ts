/**
 * Signing people in (contract §10): the organization-key route that makes one-time sign-in
 * links, the page-level routes a browser follows (a link, the OpenID Connect redirect and its
 * callback), and what the console's sign-in page offers. The browser routes answer with
 * redirects to the console (`303 See Other`), never JSON: a refusal goes to
 * `/sign-in?error=<code>`, where the console says what happened.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { CreateSignInLinkBody } from '../../../api/session-schemas.ts';
import { callerOf } from '../auth.ts';
import { parseOptionalBody } from '../validate.ts';
import { createSignInLink, redeemSignInLink, signInLinkPath, signInLinkTtl } from '../../sessions/sign-in-links.ts';
import { OidcLoginRefused, OidcRefusals, oidcBrowserCookieName, oidcCallbackPath, oidcLoginTtlSeconds, oidcStartPath, type OidcClient } from '../../sessions/oidc.ts';
import { setSessionCookie, type ConsoleSettings } from '../session-auth.ts';
import type { Params, RouteContext } from './context.ts';

/** Where a signed-in person lands. */
export const landingPath = '/inbox';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** False for pages of the console and its sign-in flows: served, but not API operations (openapi/route-registry.ts). */
    apiDocument?: boolean;
  }
}

/** Routes that are pages of a browser flow, not API operations: kept out of the OpenAPI document. */
export const browserRoute: { config: { apiDocument: boolean } } = { config: { apiDocument: false } };

/**
 * `POST /humans/{human_id}/sign-in-links` (organization key; `ttl_seconds?` 60–604800, default
 * 900) → 201 `{url, expires_at, human_id}`: a URL that signs its first opener in as the human.
 * Errors: `not_found` (human), `invalid_request`.
 */
export function signInLinkRoutes(app: FastifyInstance, { deps }: RouteContext, settings: ConsoleSettings): void {
  app.post<Params<'human_id'>>('/humans/:human_id/sign-in-links', async (request, reply) => {
    const body = parseOptionalBody(CreateSignInLinkBody, request.body);
    const link = await createSignInLink(deps, callerOf(request), request.params.human_id, body.ttl_seconds ?? signInLinkTtl.default, settings.publicUrl());
    return reply.code(201).send(link);
  });
}

/**
 * `GET /sign-in/options` (no credential) → 200 `{oidc: {issuer, start_url} | null, operators}`:
 * what the console's sign-in page offers.
 */
export function signInOptionRoutes(app: FastifyInstance, settings: ConsoleSettings, oidc: OidcClient | undefined): void {
  app.get('/sign-in/options', async () => ({
    oidc: oidc ? { issuer: oidc.issuer, start_url: oidcStartPath } : null,
    operators: Boolean(settings.adminToken),
  }));
}

function noStore(reply: FastifyReply): FastifyReply {
  // The answers carry or consume secrets: never cached, never named in a Referer.
  return reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer');
}

function refuse(reply: FastifyReply, code: string): FastifyReply {
  return noStore(reply).redirect(`/sign-in?error=${encodeURIComponent(code)}`, 303);
}

/**
 * The browser's side of signing in, at the root (not under `/api/v1`):
 * `GET /sign-in/link?token=…` opens a sign-in link: on success the session cookie is set and
 * the browser goes to the inbox; a used, expired or unknown link goes to
 * `/sign-in?error=link_invalid` and sets nothing.
 * With OpenID Connect configured, `GET /sign-in/oidc` sends the browser to the provider
 * (Authorization Code with PKCE) and `GET /sign-in/oidc/callback` finishes there: the session
 * cookie and the inbox, or `/sign-in?error=oidc_…` (see `OidcRefusals`).
 */
export function browserSignInRoutes(app: FastifyInstance, { deps }: RouteContext, settings: ConsoleSettings, oidc: OidcClient | undefined): void {
  app.get<{ Querystring: { token?: string } }>(signInLinkPath, browserRoute, async (request, reply) => {
    const token = typeof request.query.token === 'string' ? request.query.token : undefined;
    const signedIn = await redeemSignInLink(deps.db, token);
    if (!signedIn) return refuse(reply, 'link_invalid');
    setSessionCookie(reply, settings, signedIn.secret);
    return noStore(reply).redirect(landingPath, 303);
  });
  if (!oidc) return;
  const cookie = () => ({ path: oidcStartPath, httpOnly: true, sameSite: 'lax' as const, secure: settings.publicUrl().startsWith('https:') });
  app.get(oidcStartPath, browserRoute, async (request, reply) => {
    let started: { location: string; browserSecret: string };
    try {
      started = await oidc.start(deps.db, `${settings.publicUrl()}${oidcCallbackPath}`);
    } catch (error) {
      request.log.error({ err: error }, 'OpenID Connect: the provider could not be reached');
      return refuse(reply, 'oidc_unavailable');
    }
    reply.setCookie(oidcBrowserCookieName, started.browserSecret, { ...cookie(), maxAge: oidcLoginTtlSeconds });
    return noStore(reply).redirect(started.location, 303);
  });
  app.get(oidcCallbackPath, browserRoute, async (request, reply) => {
    reply.clearCookie(oidcBrowserCookieName, cookie());
    const url = new URL(request.url, `${settings.publicUrl()}/`);
    if (url.searchParams.has('error')) return refuse(reply, OidcRefusals.providerError);
    try {
      const signedIn = await oidc.finish(deps.db, url, request.cookies[oidcBrowserCookieName]);
      setSessionCookie(reply, settings, signedIn.secret);
      return noStore(reply).redirect(landingPath, 303);
    } catch (error) {
      if (!(error instanceof OidcLoginRefused)) {
        request.log.error({ err: error }, 'OpenID Connect: the sign-in could not be finished');
        return refuse(reply, 'oidc_unavailable');
      }
      request.log.warn({ code: error.code }, `OpenID Connect sign-in refused: ${error.message}`);
      return refuse(reply, error.code);
    }
  });
}
