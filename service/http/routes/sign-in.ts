/**
 * Signing people in (contract §10): the organization-key route that makes one-time sign-in
 * links, the page-level routes a browser follows (a link's page and its form, the OpenID Connect
 * redirect and its callback), and what the console's sign-in page offers. The browser routes
 * answer with HTML (a link's page) or redirects to the console (`303 See Other`), never JSON: a
 * refusal goes to `/sign-in?error=<code>`, where the console says what happened.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { CreateSignInLinkBody } from '../../../api/session-schemas.ts';
import { callerOf } from '../auth.ts';
import { carriesSecret } from '../security-headers.ts';
import { clearSignInCsrf, isSignInFormPost, issueSignInCsrf } from '../sign-in-csrf.ts';
import { signInPage, signInPageCsp } from '../sign-in-page.ts';
import { parseOptionalBody } from '../validate.ts';
import { sessionCookieName } from '../../sessions/sessions.ts';
import { createSignInLink, describeSignInLink, redeemSignInLink, signInLinkPath, signInLinkTtl } from '../../sessions/sign-in-links.ts';
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

/** A browser route whose answers carry or consume a secret: also `Cache-Control: no-store` (contract §14). */
const secretBrowserRoute = { config: { ...browserRoute.config, ...carriesSecret.config } };

/** The largest sign-in form body: two hidden fields of about 100 characters. */
const signInFormLimitBytes = 4096;

/**
 * `POST /humans/{human_id}/sign-in-links` (organization key; `ttl_seconds?` 60–604800, default
 * 900) → 201 `{url, expires_at, human_id}` with `Cache-Control: no-store`: a URL whose page signs
 * in, once, the browser that presses its button as the human. Errors: `not_found` (human),
 * `invalid_request`.
 */
export function signInLinkRoutes(app: FastifyInstance, { deps }: RouteContext, settings: ConsoleSettings): void {
  app.post<Params<'human_id'>>('/humans/:human_id/sign-in-links', carriesSecret, async (request, reply) => {
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
 * `GET /sign-in/link?token=…` opens a sign-in link's page (200 `text/html`, no script): it names
 * the human, their team and organization, with one form whose button posts the link back; it
 * spends nothing and sets only the form's CSRF cookie (http/sign-in-csrf.ts). A used, expired or
 * unknown link goes to `/sign-in?error=link_invalid`.
 * `POST /sign-in/link` (`application/x-www-form-urlencoded`: `token`, `csrf`) redeems the link:
 * only from this origin with the page's CSRF token and cookie (else `/sign-in?error=link_not_confirmed`,
 * nothing spent); it ends the browser's current session, sets the new session cookie and goes to
 * the inbox; a used, expired or unknown link goes to `/sign-in?error=link_invalid`.
 * With OpenID Connect configured, `GET /sign-in/oidc` sends the browser to the provider
 * (Authorization Code with PKCE) and `GET /sign-in/oidc/callback` finishes there: the session
 * cookie and the inbox, or `/sign-in?error=oidc_…` (see `OidcRefusals`).
 */
export function browserSignInRoutes(app: FastifyInstance, { deps, hostPolicy }: RouteContext, settings: ConsoleSettings, oidc: OidcClient | undefined): void {
  // The sign-in form's body (this plugin only: the API takes JSON alone).
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)));
  });
  // This server's own origins: the public URL's and those of the addresses it listens on.
  const ownOrigins = () => new Set([new URL(settings.publicUrl()).origin, ...(hostPolicy?.()?.origins ?? [])]);
  app.get<{ Querystring: { token?: string } }>(signInLinkPath, secretBrowserRoute, async (request, reply) => {
    const token = typeof request.query.token === 'string' ? request.query.token : undefined;
    const link = await describeSignInLink(deps.db, token);
    if (!link || token === undefined) return refuse(reply, 'link_invalid');
    const csrf = issueSignInCsrf(request, reply, signInLinkPath, settings.publicUrl());
    const page = signInPage({ humanName: link.human_name, teamName: link.team_name, orgName: link.org_name, expiresAt: link.expires_at, token, csrf, action: signInLinkPath });
    return noStore(reply)
      .type('text/html; charset=utf-8')
      .header('content-security-policy', signInPageCsp)
      // The form's POST must carry this origin in `Origin` (no-referrer would make it "null"); no
      // other page is linked, and other origins get the origin alone, never the token.
      .header('referrer-policy', 'strict-origin')
      .header('x-content-type-options', 'nosniff')
      .header('x-frame-options', 'DENY')
      .header('cross-origin-opener-policy', 'same-origin')
      .send(page);
  });
  app.post<{ Body: Record<string, unknown> | undefined }>(signInLinkPath, { ...secretBrowserRoute, bodyLimit: signInFormLimitBytes }, async (request, reply) => {
    const form = request.headers['content-type']?.startsWith('application/x-www-form-urlencoded') ? request.body : undefined;
    const field = (name: string) => (typeof form?.[name] === 'string' ? (form[name] as string) : undefined);
    if (!isSignInFormPost(request, field('csrf'), ownOrigins())) return refuse(reply, 'link_not_confirmed');
    const signedIn = await redeemSignInLink(deps.db, field('token'), { replaces: request.cookies[sessionCookieName] });
    if (!signedIn) return refuse(reply, 'link_invalid');
    clearSignInCsrf(reply, signInLinkPath, settings.publicUrl());
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
