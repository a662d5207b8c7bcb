/**
 * `teamctl worker --metrics-listen` on a real Temporal server (scripts/with-temporal.sh; CI always
 * starts one) against a real acs-server (issue 42; docs/temporal.md, "Metrics"): a worker process
 * is started as a user starts it, an apply runs on it, and both of its endpoints are scraped and
 * read with Prometheus's own parser (test/support/prometheus.ts): teamctl's counters must count
 * each change of the apply once, by kind and outcome, and the SDK's endpoint must export every
 * SDK metric the worker's dashboard reads that a healthy worker exports after an apply
 * (worker/metrics.ts `temporalSdkMetricNames`; the failure counters and cache misses of
 * `temporalSdkMetricNamesOnFirstEvent` appear only once such an event happened).
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { applyWithTemporal } from '../../engine/temporal-engine.ts';
import type { DesiredState } from '../../plan/types.ts';
import { startServer } from '../../service/index.ts';
import { temporalSdkMetricNames } from '../../worker/metrics.ts';
import { installParser, scrape, scrapeUntil } from '../support/prometheus.ts';
import { desiredFromFile, withOrganizationName } from '../support/synthetic.ts';
import { describeTemporal, spawnWorker, testSettings, type WorkerProcess } from '../support/temporal.ts';

/** Whether `port` on loopback can be listened on now. */
function free(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/** A loopback port P with P and P+1 free now (the worker listens on both). */
async function freePortPair(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer();
      probe.listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    if (port < 65_535 && (await free(port)) && (await free(port + 1))) return port;
  }
  throw new Error('no two adjacent free loopback ports');
}

describeTemporal('teamctl worker --metrics-listen', () => {
  let server: Awaited<ReturnType<typeof startServer>>;
  let env: Record<string, string>;
  let example: DesiredState;
  let worker: WorkerProcess | undefined;

  beforeAll(async () => {
    await installParser();
    server = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false, rateLimit: false });
    env = { ACS_API_KEY: (await server.provisionOrganization('worker-metrics')).api_key, ECHO_PROVIDER_KEY: 'worker-metrics-echo-key-7f3a' };
    example = await desiredFromFile(new URL('../../examples/acme-research.yaml', import.meta.url));
  }, 300_000);

  afterAll(async () => {
    await worker?.kill('SIGTERM');
    await server?.close();
  }, 120_000);

  it('worker metrics: after an apply the worker counts each change once by kind and outcome, and serves the SDK\'s task slots, latencies and sticky cache on its own port', async () => {
    const port = await freePortPair();
    const taskQueue = `teamctl-metrics-${randomUUID()}`;
    worker = await spawnWorker(taskQueue, { ...env, TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS! }, ['--metrics-listen', `127.0.0.1:${port}`]);
    const sdkUrl = `http://127.0.0.1:${port}/metrics`;
    const ownUrl = `http://127.0.0.1:${port + 1}/metrics`;
    expect(worker.output()).toContain(`teamctl worker metrics at ${sdkUrl} (Temporal SDK) and ${ownUrl} (teamctl)`);

    const before = await scrape(ownUrl);
    expect(before.value('teamctl_apply_changes_total')).toBe(0);
    expect(before.has('process_cpu_seconds_total')).toBe(true);

    const orgName = `worker-metrics-${randomUUID()}`;
    const result = await applyWithTemporal({ connection: { baseUrl: server.url, apiKeyEnv: 'ACS_API_KEY' }, desired: withOrganizationName(example, orgName) }, { settings: testSettings(), taskQueue });
    expect(result.applied.length).toBeGreaterThan(0);
    expect(result.omitted).toBeUndefined();
    // A provider key is set by one PUT, which cannot tell a new key from a replaced one: the worker
    // counts it `updated` where the apply's result, which knows the plan, says `created`.
    const outcomeOf = (change: (typeof result.applied)[number]) => (change.kind === 'provider_key' && change.outcome === 'created' ? 'updated' : change.outcome);
    const expected = new Map<string, number>();
    for (const change of result.applied) expected.set(`${change.kind} ${outcomeOf(change)}`, (expected.get(`${change.kind} ${outcomeOf(change)}`) ?? 0) + 1);
    expect(expected.size).toBeGreaterThan(1);

    const after = await scrape(ownUrl);
    expect(after.value('teamctl_apply_changes_total')).toBe(result.applied.length);
    for (const [key, count] of expected) {
      const [kind, outcome] = key.split(' ') as [string, string];
      expect(after.value('teamctl_apply_changes_total', { kind, outcome }), key).toBe(count);
    }
    expect(after.value('teamctl_apply_changes_total', { outcome: 'failed' })).toBe(0);
    // OpenMetrics, when asked for, parses too and says the same.
    expect((await scrape(ownUrl, { openMetrics: true })).value('teamctl_apply_changes_total')).toBe(result.applied.length);

    // The SDK's endpoint: every metric the dashboard reads, once the worker has done the work
    // that makes each appear (the exporter names a counter only once it moved).
    let missing: string[] = [];
    const sdk = await scrapeUntil(
      sdkUrl,
      (s) => (missing = temporalSdkMetricNames.filter((name) => !s.has(name) && !s.has(`${name}_bucket`))).length === 0,
      'the SDK metrics the dashboard reads',
      30_000,
    ).catch((error: Error) => {
      throw new Error(`the SDK's endpoint lacks ${missing.join(', ')}: ${error.message.slice(0, 300)}`);
    });
    expect(sdk.value('temporal_worker_task_slots_available', { worker_type: 'WorkflowWorker' })).toBeGreaterThan(0);
    expect(sdk.value('temporal_workflow_completed_total')).toBeGreaterThanOrEqual(1);
    expect(sdk.value('temporal_workflow_task_schedule_to_start_latency_count')).toBeGreaterThanOrEqual(1);
    // Durations in seconds: a schedule-to-start on a loopback server is far under a minute.
    const latency = sdk.value('temporal_workflow_task_schedule_to_start_latency_sum') / sdk.value('temporal_workflow_task_schedule_to_start_latency_count');
    expect(latency).toBeLessThan(60);
    // teamctl's counters are not on the SDK's port, nor the SDK's on teamctl's.
    expect(sdk.has('teamctl_apply_changes_total')).toBe(false);
    expect(after.has('temporal_worker_task_slots_available')).toBe(false);
  }, 300_000);
});
