/**
 * Serving a prom-client registry to Prometheus — shared by acs-server (`--metrics-listen`,
 * service/metrics/) and `teamctl worker` (`--metrics-listen`, worker/metrics.ts).
 *
 * - **Its own listener.** Metrics are served by an HTTP server of their own on the address the
 *   operator gives, never by the public API's port: whoever reaches the API (a tenant) cannot
 *   read the process's figures, and a scrape never queues behind the API's requests.
 * - **Both formats.** The Prometheus text format (0.0.4) by default, OpenMetrics 1.0.0 when the
 *   scraper prefers it in `Accept` (Prometheus does unless told otherwise); chosen with the
 *   `negotiator` library, as HTTP servers of the jshttp family do.
 */
import http from 'node:http';
import Negotiator from 'negotiator';
import { Histogram, Registry, Summary, type RegistryContentType } from 'prom-client';

/** The media types a metrics listener offers, the first being the default (no `Accept`, `*\/*`). */
const offered = ['text/plain; version=0.0.4', 'application/openmetrics-text; version=1.0.0'];

/**
 * Whether the `Accept` header prefers OpenMetrics 1.0.0 over the Prometheus text format 0.0.4
 * (RFC 9110 §12.5.1: q-values, then specificity). Input: the header's value, if any.
 */
export function prefersOpenMetrics(accept: string | undefined): boolean {
  if (accept === undefined || accept.trim() === '') return false;
  return new Negotiator({ headers: { accept } }).mediaType(offered) === offered[1];
}

/** One answer to a scrape: its `Content-Type` and body. */
export interface Exposition {
  contentType: string;
  body: string;
}

/**
 * The exposition of `registry` in the format `accept` prefers ({@link prefersOpenMetrics}).
 * Output: a function of the `Accept` header that resolves with the content type and body.
 * Errors: rejects with a collector's error (a gauge read from storage may fail).
 *
 * Scrapes of one registry are answered one after another: prom-client switches a registry's
 * format in place, and while writing OpenMetrics it renames every counter (it drops the `_total`
 * it then adds to each sample), so a Prometheus-format scrape running beside it would print the
 * counters without their `_total`. Each scrape sets the format it needs and puts the names back.
 */
export function createExposition(registry: Registry<RegistryContentType>): (accept: string | undefined) => Promise<Exposition> {
  let last: Promise<unknown> = Promise.resolve();
  return (accept) => {
    const run = last.then(async () => {
      registry.setContentType(prefersOpenMetrics(accept) ? Registry.OPENMETRICS_CONTENT_TYPE : Registry.PROMETHEUS_CONTENT_TYPE);
      const names = registry.getMetricsAsArray().map((metric) => [metric, metric.name] as const);
      try {
        return { contentType: registry.contentType, body: await registry.metrics() };
      } finally {
        for (const [metric, name] of names) metric.name = name;
      }
    });
    last = run.catch(() => undefined);
    return run;
  };
}

/**
 * The names of the series `registry` exports, as a query names them: a counter or gauge by its
 * name, a histogram by `_bucket`, `_sum` and `_count`, a summary by its name, `_sum` and `_count`.
 * Read from the registered metrics, without collecting (no gauge reads storage).
 */
export function seriesNames(registry: Registry<RegistryContentType>): string[] {
  return registry.getMetricsAsArray().flatMap((metric) => {
    if (metric instanceof Histogram) return [`${metric.name}_bucket`, `${metric.name}_sum`, `${metric.name}_count`];
    if (metric instanceof Summary) return [metric.name, `${metric.name}_sum`, `${metric.name}_count`];
    return [metric.name];
  });
}

/** A running metrics listener. */
export interface MetricsListener {
  /** `http://HOST:PORT/metrics`, with the port it listens on. */
  url: string;
  /** Stops listening and closes its connections. */
  close(): Promise<void>;
}

/**
 * Serves `expose` (see {@link createExposition}) at `GET /metrics` (and `HEAD`) on `host:port`,
 * `Cache-Control: no-store`; any other path is 404, any other method 405. A failed collection is
 * 500 with a one-line reason (the scrape then counts as failed: `up` is 0). Output: the listener,
 * once listening. Errors: rejects with the listen error (`EADDRINUSE`, `EADDRNOTAVAIL`).
 */
export async function startMetricsListener(options: { host: string; port: number; expose: (accept: string | undefined) => Promise<Exposition> }): Promise<MetricsListener> {
  const server = http.createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found: metrics are at /metrics\n');
      return;
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('method not allowed\n');
      return;
    }
    options.expose(request.headers.accept).then(
      ({ contentType, body }) => {
        response.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' });
        response.end(request.method === 'HEAD' ? undefined : body);
      },
      (error: unknown) => {
        response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end(`collecting the metrics failed: ${(error as Error).message}\n`);
      },
    );
  });
  // A scrape is one short request; an idle scraper connection must not hold a close.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${port}/metrics`,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
