/**
 * `npm run bench:apply-rate-limited`: an apply of 100 teams × 10 agents × 20 edges (3,101 creates)
 * against acs-server at its default rate limit (1,200 requests a minute per key), on the local
 * engine and (with `TEMPORAL_ADDRESS`) on Temporal: does it finish in one invocation, how long it
 * takes against the time the limit allows (requests ÷ 1,200 a minute), and how many 429s it met.
 *
 *   bash scripts/with-temporal.sh --install -- npm run bench:apply-rate-limited
 *
 * The server runs in this process on PGlite in memory; the limit, not the storage, sets the pace.
 * Prints a markdown table. Not part of the tests: it takes about three minutes per engine.
 */
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { createApplyActivities } from '../activities/apply-activities.ts';
import { applyLocally } from '../engine/local-engine.ts';
import { defaultRateLimit } from '../service/http/rate-limit.ts';
import { startServer } from '../service/index.ts';
import { loadTemporalSettings } from '../temporal/settings.ts';
import { resourceCount, syntheticDefinition } from '../test/support/synthetic.ts';
import { createWorker } from '../worker/worker.ts';
import type { ApplyInput } from '../workflows/apply-orchestration.ts';
import { applyWorkflow } from '../workflows/apply-workflow.ts';

Runtime.install({ logger: new DefaultLogger('ERROR') });
const size = { teams: 100, agents: 10, edges: 20 };

/** A `fetch` that counts requests and 429 answers. */
function countingFetch() {
  const counts = { requests: 0, refused: 0 };
  const wrapped: typeof fetch = async (input, init) => {
    counts.requests++;
    const response = await fetch(input, init);
    if (response.status === 429) counts.refused++;
    return response;
  };
  return { fetch: wrapped, counts };
}

const server = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false, rateLimit: defaultRateLimit });
const rows: string[] = [];
try {
  const engines: Array<[string, (input: ApplyInput, deps: { env: NodeJS.ProcessEnv; fetch: typeof fetch }) => Promise<unknown>]> = [
    ['local', (input, deps) => applyLocally(input, createApplyActivities(deps))],
  ];
  if (process.env.TEMPORAL_ADDRESS) {
    engines.push([
      'temporal',
      async (input, deps) => {
        const settings = loadTemporalSettings(process.env);
        const taskQueue = `rate-limited-${randomUUID()}`;
        const { worker, run } = await createWorker(settings, { taskQueue, activityDeps: deps });
        const running = run();
        const connection = await Connection.connect(settings.connectionOptions as Parameters<typeof Connection.connect>[0]);
        try {
          const client = new Client({ connection, namespace: settings.namespace });
          return await client.workflow.execute(applyWorkflow, { taskQueue, workflowId: `teamctl-apply/${input.desired.organization.name}`, args: [input] });
        } finally {
          await connection.close();
          worker.shutdown();
          await running;
        }
      },
    ]);
  }
  for (const [engine, apply] of engines) {
    // A key of its own per engine: each starts with a full rate-limit window.
    const { api_key } = await server.provisionOrganization(`rate-limited-${engine}`);
    const { fetch, counts } = countingFetch();
    const input: ApplyInput = { connection: { baseUrl: server.url, apiKeyEnv: 'BENCH_KEY' }, desired: syntheticDefinition(`rate-limited-${engine}-org`, size) };
    const started = performance.now();
    let outcome = 'finished in one invocation';
    try {
      await apply(input, { env: { BENCH_KEY: api_key }, fetch });
    } catch (error) {
      outcome = `failed: ${(error as Error).message}`;
    }
    const seconds = (performance.now() - started) / 1000;
    const allowed = (counts.requests / defaultRateLimit.max) * (defaultRateLimit.windowMs / 1000);
    rows.push(`| ${engine} | ${outcome} | ${seconds.toFixed(1)} | ${counts.requests.toLocaleString('en-US')} | ${allowed.toFixed(1)} | ${(seconds / allowed).toFixed(2)} | ${counts.refused} |`);
    process.stdout.write(`${rows.at(-1)}\n`);
  }
} finally {
  await server.close();
}
process.stdout.write(
  [
    '',
    `Apply of ${size.teams} teams × ${size.agents} agents × ${size.edges} edges (${resourceCount(size).toLocaleString('en-US')} creates) at the default rate limit of ${defaultRateLimit.max.toLocaleString('en-US')} requests a minute, measured ${new Date().toISOString().slice(0, 10)}:`,
    '',
    '| engine | outcome | wall, s | requests sent | time the limit allows, s | wall ÷ allowed | 429 answers |',
    '|---|---|---:|---:|---:|---:|---:|',
    ...rows,
    '',
  ].join('\n'),
);
