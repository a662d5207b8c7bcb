/**
 * Sign-in through an OpenID Connect provider (contract §10): the Authorization Code flow with
 * PKCE (RFC 7636), through the `openid-client` library. The state of a login between the
 * redirect to the provider and its callback (PKCE verifier, nonce) is kept server-side in
 * `oidc_logins`, named by a hash of its `state` and bound to the browser that started it by a
 * cookie, so any process sharing the database can finish it and a login cannot be planted in
 * another browser (login CSRF). A verified `email` signs the person in as every human with that
 * email (compared without regard to case); no verified email, or no such human, is refused.
 */
import { randomBytes } from 'node:crypto';
import type { Configuration } from 'openid-client';
import type { Db } from '../storage/db.ts';
import { hashKey } from '../domain/key-secrets.ts';
import { createPersonSession, SessionMethods, type PersonSession } from './sessions.ts';

/** Where the provider sends the browser back, under the console's public URL. */
export const oidcCallbackPath = '/sign-in/oidc/callback';

/** Where the console's "Sign in with …" button goes. */
export const oidcStartPath = '/sign-in/oidc';

/** The cookie binding a login in progress to its browser. */
export const oidcBrowserCookieName = 'acs_oidc';

/** How long a person may take at the provider before the login must start again. */
export const oidcLoginTtlSeconds = 600;

/** The provider acs-server signs people in through (`--oidc-issuer`, `--oidc-client-id`, `ACS_OIDC_CLIENT_SECRET`). */
export interface OidcSettings {
  issuer: string;
  clientId: string;
  clientSecret: string;
}

/** Why a login was refused; the console shows each in words (`/sign-in?error=…`). */
export const OidcRefusals = {
  /** The callback named no login in progress in this browser, or it expired. */
  loginExpired: 'oidc_login_expired',
  /** The provider answered with an error, or its answer failed a check (state, nonce, PKCE, signature). */
  providerError: 'oidc_failed',
  /** The provider vouched for no email, or did not mark it verified. */
  noVerifiedEmail: 'oidc_email_unverified',
  /** No human of any team has that email. */
  noHuman: 'oidc_no_human',
} as const;
export type OidcRefusal = (typeof OidcRefusals)[keyof typeof OidcRefusals];

/** A refused login: `code` is one of {@link OidcRefusals}; `message` is for the server's log (never a secret). */
export class OidcLoginRefused extends Error {
  readonly code: OidcRefusal;
  constructor(code: OidcRefusal, message: string) {
    super(message);
    this.name = 'OidcLoginRefused';
    this.code = code;
  }
}

/**
 * Checks the settings at start: the issuer is an absolute https URL, or http on a loopback
 * host (a provider on the same machine, as in development and tests). Errors: throws naming
 * the flag or variable at fault.
 */
export function checkOidcSettings(settings: OidcSettings): void {
  let url: URL;
  try {
    url = new URL(settings.issuer);
  } catch {
    throw new Error(`--oidc-issuer: not a URL: ${settings.issuer}`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url.hostname))) {
    throw new Error(`--oidc-issuer: must be an https URL (http only on a loopback host), got ${settings.issuer}`);
  }
  if (!settings.clientId.trim()) throw new Error('--oidc-client-id: must not be empty');
  if (!settings.clientSecret) throw new Error('ACS_OIDC_CLIENT_SECRET must be set with --oidc-issuer');
}

function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}

/** An OpenID Connect client of one provider: starts logins and finishes them into sessions. */
export interface OidcClient {
  /** The issuer, for the console's button ("Sign in with …" names its host). */
  readonly issuer: string;
  /**
   * Starts a login: stores its state and returns where to send the browser (the provider's
   * authorization endpoint) and the value of the {@link oidcBrowserCookieName} cookie to set.
   * `redirectUri` is the absolute callback URL. Errors: rejects when the provider's discovery
   * document cannot be fetched (retried on the next login).
   */
  start(db: Db, redirectUri: string): Promise<{ location: string; browserSecret: string }>;
  /**
   * Finishes a login at the callback: `callbackUrl` is the absolute URL the browser came back
   * to, `browserSecret` the cookie's value. Output: a person's session as every human with the
   * verified email. Errors: {@link OidcLoginRefused}.
   */
  finish(db: Db, callbackUrl: URL, browserSecret: string | undefined): Promise<{ secret: string; session: PersonSession }>;
}

/**
 * Makes the client of `settings`. The provider's discovery document is fetched at the first
 * login (and again after a failure), so a provider that is down when acs-server starts delays
 * only sign-in through it.
 */
export function createOidcClient(settings: OidcSettings): OidcClient {
  checkOidcSettings(settings);
  let configuration: Promise<{ lib: typeof import('openid-client'); config: Configuration }> | undefined;
  const discover = () => {
    configuration ??= (async () => {
      // Loaded on first use: servers without OpenID Connect never load it.
      const lib = await import('openid-client');
      const issuer = new URL(settings.issuer);
      const execute = issuer.protocol === 'http:' ? [lib.allowInsecureRequests] : [];
      const config = await lib.discovery(issuer, settings.clientId, settings.clientSecret, undefined, { execute });
      return { lib, config };
    })().catch((error: unknown) => {
      configuration = undefined;
      throw error;
    });
    return configuration;
  };

  return {
    issuer: settings.issuer,

    async start(db, redirectUri) {
      const { lib, config } = await discover();
      const codeVerifier = lib.randomPKCECodeVerifier();
      const state = lib.randomState();
      const nonce = lib.randomNonce();
      const browserSecret = randomBytes(32).toString('base64url');
      await db.query(
        `INSERT INTO oidc_logins (state_hash, browser_hash, code_verifier, nonce, expires_at) VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5))`,
        [hashKey(state), hashKey(browserSecret), codeVerifier, nonce, oidcLoginTtlSeconds],
      );
      const location = lib.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        scope: 'openid email',
        response_type: 'code',
        code_challenge: await lib.calculatePKCECodeChallenge(codeVerifier),
        code_challenge_method: 'S256',
        state,
        nonce,
      });
      return { location: location.href, browserSecret };
    },

    async finish(db, callbackUrl, browserSecret) {
      const state = callbackUrl.searchParams.get('state');
      if (!state || !browserSecret) throw new OidcLoginRefused(OidcRefusals.loginExpired, 'no login in progress in this browser');
      // Taken once: a replayed callback finds nothing.
      const rows = await db.query<{ code_verifier: string; nonce: string }>(
        `DELETE FROM oidc_logins WHERE state_hash = $1 AND browser_hash = $2 AND expires_at > now() RETURNING code_verifier, nonce`,
        [hashKey(state), hashKey(browserSecret)],
      );
      const login = rows[0];
      if (!login) throw new OidcLoginRefused(OidcRefusals.loginExpired, 'the login expired or was started in another browser');
      const { lib, config } = await discover();
      let email: unknown;
      let verified: unknown;
      try {
        const tokens = await lib.authorizationCodeGrant(config, callbackUrl, {
          pkceCodeVerifier: login.code_verifier,
          expectedState: state,
          expectedNonce: login.nonce,
          idTokenExpected: true,
        });
        const claims = tokens.claims();
        email = claims?.email;
        verified = claims?.email_verified;
        // Providers that follow the core spec put scope claims in the UserInfo response rather
        // than the ID token; ask there when the ID token has none.
        if (email === undefined && claims && tokens.access_token) {
          const info = await lib.fetchUserInfo(config, tokens.access_token, claims.sub);
          email = info.email;
          verified = info.email_verified;
        }
      } catch (error) {
        throw new OidcLoginRefused(OidcRefusals.providerError, `the provider's answer was refused: ${(error as Error).message}`);
      }
      if (typeof email !== 'string' || email === '' || verified !== true) {
        throw new OidcLoginRefused(OidcRefusals.noVerifiedEmail, 'the provider gave no verified email');
      }
      return db.transaction(async (tx) => {
        const humans = await tx.query<{ id: string }>(`SELECT id FROM participants WHERE kind = 'human' AND lower(email) = lower($1) ORDER BY id FOR KEY SHARE`, [email]);
        if (humans.length === 0) throw new OidcLoginRefused(OidcRefusals.noHuman, 'no human has the verified email');
        return createPersonSession(tx, { humanIds: humans.map((h) => h.id), method: SessionMethods.oidc, email: email as string });
      });
    },
  };
}
