/**
 * The Grafana dashboards in docs/dashboards/ (issue 42) read only metrics the code exports: every
 * PromQL expression of a panel and every variable's query is parsed for the metric names it
 * selects, and each must be a series of acs-server's registry (service/metrics/), of the worker's
 * (worker/metrics.ts), or one of the Temporal SDK's that worker/metrics.ts lists from Temporal's
 * SDK metrics reference (the worker's long test checks a live worker exports them). And every
 * metric of acs-server's own is on its dashboard, every one of teamctl's on the worker's.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createServiceMetrics } from '../../service/metrics/service-metrics.ts';
import { createWorkerMetrics, temporalSdkMetricNames, temporalSdkMetricNamesOnFirstEvent } from '../../worker/metrics.ts';

const root = resolve(import.meta.dirname, '..', '..');

/** Words of PromQL that are not metric names: keywords and modifiers. */
const keywords = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset', 'atan2', 'inf', 'nan']);

/**
 * The metric names a PromQL expression selects: identifiers left once strings, label matchers,
 * ranges and label lists (`by (…)`) are taken out, other than function names (followed by `(`)
 * and keywords. A Grafana `label_values(METRIC, LABEL)` names METRIC.
 */
function metricNames(expr: string): string[] {
  const labelValues = /^\s*label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*)/.exec(expr);
  if (labelValues) return [labelValues[1]!];
  const text = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names: string[] = [];
  for (const match of text.matchAll(/(?<![A-Za-z0-9_:.$])[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const rest = text.slice(match.index + match[0].length).trimStart();
    if (rest.startsWith('(') || keywords.has(match[0].toLowerCase())) continue;
    names.push(match[0]);
  }
  return names;
}

interface Dashboard {
  title: string;
  panels: Array<{ type: string; title: string; targets?: Array<{ expr: string }> }>;
  templating: { list: Array<{ type: string; query?: string | { query: string } }> };
}

function load(file: string): Dashboard {
  return JSON.parse(readFileSync(resolve(root, 'docs', 'dashboards', file), 'utf8')) as Dashboard;
}

/** Every query of a dashboard: each panel's targets and each query variable's. */
function queries(dashboard: Dashboard): string[] {
  const panels = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
  const variables = dashboard.templating.list.filter((v) => v.type === 'query').map((v) => (typeof v.query === 'string' ? v.query : v.query!.query));
  return [...panels, ...variables];
}

/** SDK metrics as queries name them: the histograms (`…_latency`) by `_bucket`, `_sum`, `_count`. */
const sdkSeries = [...temporalSdkMetricNames, ...temporalSdkMetricNamesOnFirstEvent].flatMap((name) => (name.endsWith('_latency') ? [`${name}_bucket`, `${name}_sum`, `${name}_count`] : [name]));

describe('dashboards', () => {
  it('dashboards: the PromQL reader finds the metrics of an expression and nothing else', () => {
    expect(metricNames('histogram_quantile(0.95, sum by (le, route) (rate(acs_http_request_duration_seconds_bucket{instance=~"$instance",status=~"5.."}[$__rate_interval])))')).toEqual([
      'acs_http_request_duration_seconds_bucket',
    ]);
    expect(metricNames('sum(rate(a_total[5m])) / (sum(rate(a_total[5m])) + sum(b_total offset 1h)) * 60')).toEqual(['a_total', 'a_total', 'b_total']);
    expect(metricNames('label_values(acs_http_requests_total, instance)')).toEqual(['acs_http_requests_total']);
  });

  it('dashboards: every query of the acs-server dashboard names a series acs-server exports, and every acs_ metric is on it', () => {
    const dashboard = load('acs-server.json');
    // A registry with the pool's gauge (registered when the storage is PostgreSQL).
    const exported = new Set(createServiceMetrics({ db: { query: async () => [] }, poolStats: () => ({ total: 0, idle: 0, waiting: 0 }) }).names());
    const used = queries(dashboard).flatMap(metricNames);
    expect(used.length).toBeGreaterThanOrEqual(20);
    expect(used.filter((name) => !exported.has(name))).toEqual([]);
    const ours = [...exported].filter((name) => name.startsWith('acs_')).map((name) => name.replace(/_(bucket|sum|count)$/, ''));
    expect([...new Set(ours)].filter((name) => !used.some((u) => u === name || u.startsWith(`${name}_`)))).toEqual([]);
    for (const panel of dashboard.panels.filter((p) => p.type !== 'row')) expect(panel.targets?.length ?? 0, panel.title).toBeGreaterThan(0);
  });

  it('dashboards: every query of the worker dashboard names a series of teamctl\'s registry or of the Temporal SDK\'s documented metrics, and both teamctl counters are on it', () => {
    const dashboard = load('teamctl-worker.json');
    const exported = new Set([...createWorkerMetrics().names(), ...sdkSeries]);
    const used = queries(dashboard).flatMap(metricNames);
    expect(used.length).toBeGreaterThanOrEqual(15);
    expect(used.filter((name) => !exported.has(name))).toEqual([]);
    for (const name of ['teamctl_apply_changes_total', 'teamctl_pipeline_steps_total', 'temporal_worker_task_slots_available', 'temporal_workflow_task_schedule_to_start_latency_bucket', 'temporal_sticky_cache_size']) {
      expect(used, name).toContain(name);
    }
    for (const panel of dashboard.panels.filter((p) => p.type !== 'row')) expect(panel.targets?.length ?? 0, panel.title).toBeGreaterThan(0);
  });
});
