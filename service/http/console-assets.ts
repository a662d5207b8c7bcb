/**
 * Serves the console (contract §10: the service's user interface, at `/`): its pages answer the
 * same `index.html` (the app routes in the browser), its assets are content-hashed files under
 * `/assets/`. Everything is held in memory, gzip-compressed once, and sent with a strict
 * Content-Security-Policy: scripts, styles and connections of this origin only, no inline
 * script or style, no framing.
 *
 * Where the files come from: an installed package serves `dist/console/` (built by `npm run
 * build`); a server running from the TypeScript sources of a clone builds `console/dist/` on
 * first use when it is missing or older than the sources (console/build.ts), so the quick start
 * and `npm test` need no build step.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../../errors/catalogue.ts';
import { browserRoute } from './routes/sign-in.ts';

/** The console's pages: each answers `index.html`; the app shows the page of the path. */
export const consolePages = ['/', '/sign-in', '/inbox', '/threads/:thread_id', '/teams/:team_id', '/connect', '/operator'] as const;

/** The Content-Security-Policy of every console response (no inline script or style, this origin only). */
export const consoleCsp = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  // Markup from messages reaches the page only through the sanitizer's policy (console/src/markdown.ts).
  "require-trusted-types-for 'script'",
  'trusted-types dompurify',
].join('; ');

interface Asset {
  body: Buffer;
  gzip: Buffer;
  type: string;
  etag: string;
  immutable: boolean;
}

const types: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.map': 'application/json',
};

/** Where the built console is: `dist/console/` beside an installed package's modules, or built now in a clone. */
async function consoleDirectory(): Promise<string> {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith('.ts')) {
    // A clone running the TypeScript: console/build.ts lives two floors up. Computed, so the
    // package build (tsc) does not follow it: an installed package has no console sources.
    const builder = new URL(['..', '..', 'console', 'build.ts'].join('/'), import.meta.url).href;
    const { ensureConsoleBuild } = (await import(builder)) as { ensureConsoleBuild(): Promise<string> };
    return ensureConsoleBuild();
  }
  // dist/service/http/console-assets.js → dist/console/
  return fileURLToPath(new URL('../../console/', import.meta.url));
}

async function loadAssets(dir: string): Promise<Map<string, Asset>> {
  const assets = new Map<string, Asset>();
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    const full = join(entry.parentPath, entry.name);
    const path = `/${full.slice(dir.length).replace(/^[/\\]+/, '').split('\\').join('/')}`;
    if (path === '/build-info.json') continue;
    const body = await readFile(full);
    assets.set(path, {
      body,
      gzip: gzipSync(body, { level: 9 }),
      type: types[extname(path)] ?? 'application/octet-stream',
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
      immutable: path.startsWith('/assets/'),
    });
  }
  if (!assets.has('/index.html')) throw new Error(`the console build in ${dir} has no index.html`);
  return assets;
}

/** The console's files, loaded (and in a clone built) once, on first use or by {@link ConsoleAssets.prepare}. */
export interface ConsoleAssets {
  /** Loads the files now (acs-server start does, so the first visit is quick and a broken build is reported at once). */
  prepare(): Promise<void>;
  /**
   * Answers a request no route takes with the console's page, status 404, when it is a person's
   * browser asking for a page ({@link wantsConsolePage}): the app then shows its "Not found" page
   * instead of the problem+json an API client gets. Output: whether it answered (false: not a
   * page request, or the console cannot be loaded; the caller answers `route_not_found`).
   */
  notFound(request: FastifyRequest, reply: FastifyReply): Promise<boolean>;
}

/** First path segments that are never the console's pages: the API and the other machine surfaces keep problem+json (any case). */
const machineSegments = new Set(['api', 'v1', 'admin', 'assets', 'mcp', 'a2a', '.well-known', 'openapi.json', 'healthz', 'readyz']);

/**
 * Whether `request` is a browser asking for a page of the console: a GET or HEAD that accepts
 * HTML (a navigation sends `Accept: text/html,…`), on a path outside the API and the other
 * machine surfaces ({@link machineSegments}).
 */
export function wantsConsolePage(request: FastifyRequest): boolean {
  if (request.method !== 'GET' && request.method !== 'HEAD') return false;
  if (!/\btext\/html\b/i.test(String(request.headers.accept ?? ''))) return false;
  const first = (request.url.split('?')[0] ?? '').split('/').find((segment) => segment !== '') ?? '';
  return !machineSegments.has(first.toLowerCase());
}

function send(request: FastifyRequest, reply: FastifyReply, asset: Asset, status = 200): FastifyReply {
  reply
    .code(status)
    .header('content-type', asset.type)
    .header('etag', asset.etag)
    .header('cache-control', asset.immutable ? 'public, max-age=31536000, immutable' : 'no-cache')
    .header('content-security-policy', consoleCsp)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY')
    .header('cross-origin-opener-policy', 'same-origin')
    .header('vary', 'accept-encoding');
  // A 304 stands for a 200 only (RFC 9110 §15.4.5): the not-found page is always sent whole.
  if (status === 200 && request.headers['if-none-match'] === asset.etag) return reply.code(304).send();
  const gzip = /\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''));
  if (gzip) reply.header('content-encoding', 'gzip');
  return reply.send(gzip ? asset.gzip : asset.body);
}

/**
 * Registers the console's routes on `app` (at the root): every page of {@link consolePages} and
 * `GET /assets/*`. A file that is not there is 404 `route_not_found`; a console that cannot be
 * built or read is 503 `unavailable` (logged), while the API goes on working. A browser's page
 * request no route takes gets the console's page with 404 ({@link ConsoleAssets.notFound}, called
 * by app.ts's answer to unrouted requests).
 */
export function consoleRoutes(app: FastifyInstance): ConsoleAssets {
  let loading: Promise<Map<string, Asset>> | undefined;
  const assets = () => {
    loading ??= consoleDirectory()
      .then(loadAssets)
      .catch((error: unknown) => {
        loading = undefined;
        throw error;
      });
    return loading;
  };
  const loaded = async (request: FastifyRequest) => {
    try {
      return await assets();
    } catch (error) {
      request.log.error({ err: error }, 'the console could not be loaded');
      throw new ServiceError('unavailable', 'the console is not available: its files could not be built or read (see the server log)');
    }
  };
  for (const page of consolePages) {
    app.get(page, browserRoute, async (request, reply) => send(request, reply, (await loaded(request)).get('/index.html')!));
  }
  app.get('/assets/*', browserRoute, async (request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    const asset = (await loaded(request)).get(path);
    if (!asset) throw new ServiceError('route_not_found', `no console file ${path}`);
    return send(request, reply, asset);
  });
  return {
    prepare: async () => void (await assets()),
    async notFound(request, reply) {
      if (!wantsConsolePage(request)) return false;
      let page: Asset;
      try {
        page = (await assets()).get('/index.html')!;
      } catch (error) {
        request.log.error({ err: error }, 'the console could not be loaded');
        return false;
      }
      send(request, reply, page, 404);
      return true;
    },
  };
}
