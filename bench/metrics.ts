/**
 * `npm run bench:metrics`: what acs-server's metrics (`--metrics-listen`, issue 42) cost a request
 * and a scrape, in CPU time of this process, so that the figure holds on a machine shared with
 * other work (docs/performance.md, "Metrics"; the append benchmark with and without metrics is
 * the other half: `BENCH_METRICS=1 BENCH_PHASES=appends npm run bench`).
 *
 * - Per request: two Fastify apps with the same route (`GET /api/v1/threads/:thread_id`, which
 *   answers at once), one instrumented as acs-server instruments its app, are sent the same
 *   requests through `inject` in alternating blocks; the difference of their CPU per request is
 *   the hooks' (label lookup, a counter and a histogram).
 * - Per scrape: the exposition of a registry holding ~120 routes' series, text and OpenMetrics.
 *
 * Prints min, median and max over the blocks. Not part of the tests: numbers depend on the machine.
 */
import Fastify from 'fastify';
import { createServiceMetrics } from '../service/metrics/service-metrics.ts';

const blocks = Number(process.env.BENCH_BLOCKS ?? 10);
const perBlock = Number(process.env.BENCH_REQUESTS ?? 5_000);

function app(instrumented: boolean) {
  const server = Fastify({ logger: false });
  if (instrumented) createServiceMetrics({ db: { query: async () => [] } }).instrument(server);
  server.get('/api/v1/threads/:thread_id', async () => ({ ok: true }));
  return server;
}

/** CPU microseconds per request of `count` injected requests. */
async function cpuPerRequest(server: ReturnType<typeof app>, count: number): Promise<number> {
  const started = process.cpuUsage();
  for (let i = 0; i < count; i++) await server.inject({ method: 'GET', url: `/api/v1/threads/${i}` });
  const used = process.cpuUsage(started);
  return (used.user + used.system) / count;
}

const stats = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return `min ${sorted[0]!.toFixed(2)}, median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(2)}, max ${sorted.at(-1)!.toFixed(2)}`;
};

const plain = app(false);
const counted = app(true);
await plain.ready();
await counted.ready();
// Warm-up: both apps' code optimised before anything is measured.
await cpuPerRequest(plain, perBlock);
await cpuPerRequest(counted, perBlock);
const without: number[] = [];
const withMetrics: number[] = [];
const difference: number[] = [];
for (let block = 0; block < blocks; block++) {
  const a = await cpuPerRequest(plain, perBlock);
  const b = await cpuPerRequest(counted, perBlock);
  without.push(a);
  withMetrics.push(b);
  difference.push(b - a);
}
console.log(`CPU per request, µs (${blocks} blocks of ${perBlock}): without metrics ${stats(without)}; with ${stats(withMetrics)}; difference ${stats(difference)}`);

// A registry with the series of many routes, as a busy process has: 120 routes × 2 statuses.
const metrics = createServiceMetrics({ db: { query: async <T,>() => [{ n: 0 }] as T[] } });
const server = Fastify({ logger: false });
metrics.instrument(server);
for (let route = 0; route < 120; route++) server.get(`/api/v1/r${route}/:id`, async () => ({}));
await server.ready();
for (let route = 0; route < 120; route++) {
  await server.inject({ method: 'GET', url: `/api/v1/r${route}/x` });
  await server.inject({ method: 'POST', url: `/api/v1/r${route}/x` });
}
for (const [format, accept] of [['text', undefined], ['OpenMetrics', 'application/openmetrics-text; version=1.0.0']] as const) {
  const times: number[] = [];
  let bytes = 0;
  for (let i = 0; i < 50; i++) {
    const started = process.cpuUsage();
    bytes = (await metrics.expose(accept)).body.length;
    const used = process.cpuUsage(started);
    times.push((used.user + used.system) / 1000);
  }
  console.log(`a scrape (${format}, ${bytes.toLocaleString('en')} bytes), CPU ms: ${stats(times.slice(5))}`);
}
