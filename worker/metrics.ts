/**
 * The metrics of `teamctl worker --metrics-listen HOST:PORT` (issue 42; docs/temporal.md,
 * "Metrics"): two endpoints, because the Temporal SDK serves its own.
 *
 * - `http://HOST:PORT/metrics`: the Temporal SDK's Prometheus exporter (its Rust core's, set up by
 *   `Runtime.install({ telemetryOptions })`): task slots, schedule-to-start latencies, the sticky
 *   cache, polls and requests, named `temporal_*` as Temporal's SDK metrics reference documents
 *   them, counters with `_total`, durations in seconds.
 * - `http://HOST:PORT+1/metrics`: teamctl's own registry (prom-client): what the activities did
 *   (`teamctl_apply_changes_total`, `teamctl_pipeline_steps_total`) and Node's process metrics.
 *
 * The SDK's exporter binds its address itself and serves only its runtime's metrics: it cannot
 * serve a prom-client registry, so the two listen side by side and an operator scrapes both ports
 * (docs/temporal.md has the scrape config).
 */
import { collectDefaultMetrics, Counter, Registry, type RegistryContentType } from 'prom-client';
import type { ActivityMetrics } from '../activities/activity-metrics.ts';
import { createExposition, seriesNames, type Exposition } from '../telemetry/prometheus.ts';

/**
 * Names of the Temporal SDK's metrics the worker's dashboard reads, as Temporal's SDK metrics
 * reference names them for Core-based SDKs (https://docs.temporal.io/references/sdk-metrics), with
 * the prefix `temporal_` and the suffixes the exporter adds as configured here (`_total` on
 * counters; `_bucket`, `_sum`, `_count` on histograms). These are exported by every worker that
 * has run a workflow: the long test of the worker (test/workflows/worker-metrics.long.test.ts)
 * checks a live one exports each after an apply.
 */
export const temporalSdkMetricNames = [
  'temporal_worker_task_slots_available',
  'temporal_worker_task_slots_used',
  'temporal_num_pollers',
  'temporal_sticky_cache_size',
  'temporal_sticky_cache_hit_total',
  'temporal_workflow_task_schedule_to_start_latency',
  'temporal_workflow_task_execution_latency',
  'temporal_activity_schedule_to_start_latency',
  'temporal_activity_execution_latency',
  'temporal_workflow_completed_total',
  'temporal_request_total',
] as const;

/**
 * SDK metrics the dashboard reads that the exporter shows only from their first event on (a
 * counter is named once it moved): failures and sticky-cache misses. Named as the reference
 * names them, with the same `_total` rule as the counters of {@link temporalSdkMetricNames}.
 */
export const temporalSdkMetricNamesOnFirstEvent = [
  'temporal_sticky_cache_miss_total',
  'temporal_workflow_failed_total',
  'temporal_activity_execution_failed_total',
  'temporal_request_failure_total',
] as const;

/**
 * The SDK runtime's telemetry options for `Runtime.install` (node_modules/@temporalio/worker,
 * `RuntimeOptions.telemetryOptions`): its Prometheus exporter bound to `host:port`, counters with
 * `_total` and durations in seconds, as Prometheus names them, and the prefix `temporal_`.
 */
export function temporalTelemetryOptions(host: string, port: number) {
  return {
    metrics: {
      metricPrefix: 'temporal_',
      prometheus: { bindAddress: `${host.includes(':') ? `[${host}]` : host}:${port}`, countersTotalSuffix: true, useSecondsForDurations: true },
    },
  };
}

/** The worker's own metrics: the activities' hooks and the exposition of its registry. */
export interface WorkerMetrics extends ActivityMetrics {
  expose(accept: string | undefined): Promise<Exposition>;
  /** The names of the series of its registry, as queries name them (telemetry/prometheus.ts `seriesNames`). */
  names(): string[];
}

/** Creates the registry of one worker (its own, never prom-client's global one): Node's default metrics and the activities' counters. */
export function createWorkerMetrics(): WorkerMetrics {
  const registry = new Registry<RegistryContentType>();
  const registers = [registry];
  collectDefaultMetrics({ register: registry });
  const changes = new Counter({
    name: 'teamctl_apply_changes_total',
    help: 'Changes made by applies on this worker, counted once their retries ended, by kind (organization, team, agent, human, edge, provider_key, webhook) and outcome (created, updated, deleted, unchanged, failed).',
    labelNames: ['kind', 'outcome'] as const,
    registers,
  });
  const steps = new Counter({
    name: 'teamctl_pipeline_steps_total',
    help: 'Pipeline step activities run on this worker, by kind (converse, send, read_reply) and outcome (replied, sent, waiting, timed_out, cancelled, failed).',
    labelNames: ['kind', 'outcome'] as const,
    registers,
  });
  return {
    applyChange: (kind, outcome) => changes.inc({ kind, outcome }),
    pipelineStep: (kind, outcome) => steps.inc({ kind, outcome }),
    expose: createExposition(registry),
    names: () => seriesNames(registry),
  };
}
