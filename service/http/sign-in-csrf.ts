/**
 * The CSRF defence of a sign-in link's form (contract §10): only the form of the page the link
 * opened, in the browser that opened it, on this origin, may redeem the link. Two checks:
 *
 * - **A double-submit cookie** (OWASP's pattern for a form before there is a session): the page
 *   sets a random secret in the cookie `acs_signin_csrf` (HttpOnly, SameSite=Strict, path
 *   `/sign-in/link`) and puts a token derived from it in the form; the POST must bring both, and
 *   the token must be one of that secret (`@fastify/csrf`, the Fastify organization's port of
 *   the `csrf` package: salted SHA-256 tokens, compared in constant time). It is bound to the
 *   browser, not to the link: whoever made the link can open its page and read a token, but not
 *   the cookie of someone else's browser, so they cannot make that browser sign in (login CSRF).
 *   It is stateless — nothing is stored until the button is pressed, so a scanner's GET writes
 *   nothing — and any process on the database checks it.
 * - **The origin** (OWASP's "verify the origin with standard headers"): `Origin` must be one of
 *   this server's own origins (the public URL's, or the addresses it listens on), and
 *   `Sec-Fetch-Site`, when the browser sends it, `same-origin`. This also stops a page on a
 *   sibling domain that could write cookies for this host.
 */
import csrf from '@fastify/csrf';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** The cookie that holds the browser's CSRF secret for sign-in forms. */
export const signInCsrfCookieName = 'acs_signin_csrf';

const tokens = csrf();

/** The cookie's attributes: only the sign-in link's path, only same-site requests, `Secure` behind https. */
function cookieOptions(path: string, publicUrl: string) {
  return { path, httpOnly: true, sameSite: 'strict' as const, secure: publicUrl.startsWith('https:') };
}

/**
 * The CSRF token for the form of a page answered by `reply`: from the browser's secret (the
 * cookie), or from a new one that `reply` sets. `path` is the form's path, `publicUrl` the
 * console's (for `Secure`). Raises nothing.
 */
export function issueSignInCsrf(request: FastifyRequest, reply: FastifyReply, path: string, publicUrl: string): string {
  let secret = request.cookies[signInCsrfCookieName];
  if (!secret || !/^[A-Za-z0-9_-]{20,64}$/.test(secret)) {
    secret = tokens.secretSync();
    reply.setCookie(signInCsrfCookieName, secret, cookieOptions(path, publicUrl));
  }
  return tokens.create(secret);
}

/** Tells the browser to forget its sign-in CSRF secret (once it signed in). */
export function clearSignInCsrf(reply: FastifyReply, path: string, publicUrl: string): void {
  reply.clearCookie(signInCsrfCookieName, cookieOptions(path, publicUrl));
}

/**
 * Whether `request` may be a sign-in form's POST: it comes from one of `origins` (its `Origin`
 * header; `Sec-Fetch-Site`, when sent, is `same-origin`) and `token` is a CSRF token of the
 * browser's secret cookie. A request without `Origin` is refused: every browser sends it with a
 * POST from a page whose Referrer-Policy lets it (the page's is `strict-origin`). Raises nothing.
 */
export function isSignInFormPost(request: FastifyRequest, token: string | undefined, origins: ReadonlySet<string>): boolean {
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin') return false;
  const origin = request.headers.origin;
  if (typeof origin !== 'string' || !origins.has(origin)) return false;
  const secret = request.cookies[signInCsrfCookieName];
  return typeof token === 'string' && typeof secret === 'string' && tokens.verify(secret, token);
}
