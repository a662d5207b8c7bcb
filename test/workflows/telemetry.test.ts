/**
 * Tracing (`temporal/telemetry.ts`): when the `OTEL_*` variables turn it on and off, and, on a real
 * Temporal server (scripts/with-temporal.sh) against a real acs-server, that one apply is one
 * trace: the client's start, the workflow's run, its activities and their HTTP calls, as received
 * by a loopback stand-in for an OTLP collector; and that the traced run replays with tracing and
 * without.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyWorkflowId, withTemporalClient } from '../../engine/temporal-engine.ts';
import type { DesiredState } from '../../plan/types.ts';
import { startServer } from '../../service/index.ts';
import { CLIENT_SERVICE_NAME, WORKER_SERVICE_NAME, createTelemetry } from '../../temporal/telemetry.ts';
import { createWorker, workflowBundlerOptions, workflowsPath } from '../../worker/worker.ts';
import { applyWorkflow } from '../../workflows/apply-workflow.ts';
import { describeTemporal, testSettings } from '../support/temporal.ts';
import { desiredFromFile, withOrganizationName } from '../support/synthetic.ts';

/** One span as the collector received it, with its resource's `service.name`. */
interface ReceivedSpan {
  service: string;
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  attributes: Record<string, unknown>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpTraces {
  resourceSpans?: Array<{
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans?: Array<{ spans?: Array<{ name: string; traceId: string; spanId: string; parentSpanId?: string; attributes?: OtlpAttribute[] }> }>;
  }>;
}

function attributes(list: OtlpAttribute[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map(({ key, value }) => [key, value.stringValue ?? value.intValue ?? value.boolValue ?? value.doubleValue]));
}

/**
 * A loopback OTLP/HTTP collector: accepts JSON `POST /v1/traces` (gzipped or not) and keeps the
 * bodies as received and the spans they carry.
 */
async function startCollector() {
  const bodies: string[] = [];
  const spans: ReceivedSpan[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      const raw = Buffer.concat(chunks);
      const body = (req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw).toString('utf8');
      bodies.push(body);
      for (const resourceSpans of (JSON.parse(body) as OtlpTraces).resourceSpans ?? []) {
        const service = String(attributes(resourceSpans.resource?.attributes)['service.name']);
        for (const scope of resourceSpans.scopeSpans ?? []) {
          for (const span of scope.spans ?? []) {
            spans.push({ service, name: span.name, traceId: span.traceId, spanId: span.spanId, parentSpanId: span.parentSpanId ?? '', attributes: attributes(span.attributes) });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    bodies,
    spans,
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
}

describe('tracing settings', () => {
  it('tracing is off when no OTEL variable is set', () => {
    expect(createTelemetry({}, { defaultServiceName: WORKER_SERVICE_NAME })).toBeUndefined();
  });

  it('tracing is off when OTEL_SDK_DISABLED is true, even with an endpoint', () => {
    expect(createTelemetry({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'true' }, { defaultServiceName: WORKER_SERVICE_NAME })).toBeUndefined();
    expect(createTelemetry({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'TRUE' }, { defaultServiceName: WORKER_SERVICE_NAME })).toBeUndefined();
  });

  it('tracing is off when OTEL_TRACES_EXPORTER is none', () => {
    expect(createTelemetry({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_TRACES_EXPORTER: 'none' }, { defaultServiceName: WORKER_SERVICE_NAME })).toBeUndefined();
  });

  it('an OTEL_EXPORTER_OTLP_ENDPOINT turns tracing on, sending to its /v1/traces under the default service name', async () => {
    const telemetry = createTelemetry({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector.invalid:4318/base/' }, { defaultServiceName: WORKER_SERVICE_NAME });
    try {
      expect(telemetry?.endpoint).toBe('http://collector.invalid:4318/base/v1/traces');
      expect(telemetry?.serviceName).toBe('teamctl-worker');
      expect(telemetry?.resource.attributes['service.name']).toBe('teamctl-worker');
      expect(telemetry?.workerOptions.interceptors.workflowModules).toHaveLength(1);
      expect(telemetry?.workerOptions.sinks).toHaveProperty('exporter');
    } finally {
      await telemetry?.shutdown();
    }
  });

  it('an OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used as it is, and OTEL_SERVICE_NAME names the service', async () => {
    const telemetry = createTelemetry(
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://ignored.invalid:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector.invalid:4318/traces', OTEL_SERVICE_NAME: 'apply-bot' },
      { defaultServiceName: CLIENT_SERVICE_NAME },
    );
    try {
      expect(telemetry?.endpoint).toBe('http://collector.invalid:4318/traces');
      expect(telemetry?.serviceName).toBe('apply-bot');
    } finally {
      await telemetry?.shutdown();
    }
  });

  it('an endpoint that is not a URL is refused as invalid_usage', () => {
    expect(() => createTelemetry({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, { defaultServiceName: WORKER_SERVICE_NAME })).toThrow(
      expect.objectContaining({ code: 'invalid_usage', message: expect.stringContaining('OTEL_EXPORTER_OTLP_ENDPOINT') }),
    );
  });
});

describeTemporal('tracing on temporal', () => {
  let server: Awaited<ReturnType<typeof startServer>>;
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let apiKey: string;
  let example: DesiredState;

  beforeAll(async () => {
    collector = await startCollector();
    server = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false, rateLimit: false });
    apiKey = (await server.provisionOrganization('telemetry-tests')).api_key;
    example = await desiredFromFile(new URL('../../examples/acme-research.yaml', import.meta.url));
  }, 120_000);

  afterAll(async () => {
    await server?.close();
    await collector?.close();
  });

  it('an apply is one trace: the client start, the workflow run, its activities and their HTTP calls, with no secret in any span', async () => {
    const echoKey = `telemetry-echo-secret-${randomUUID()}`;
    const otelEnv = { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url };
    const taskQueue = `teamctl-telemetry-${randomUUID()}`;
    const orgName = `example-traced-${randomUUID()}`;
    // No `fetch` of the test's own: the activities use the global one, which is what gets traced.
    const { worker, run } = await createWorker(testSettings(), { taskQueue, activityDeps: { env: { ACS_API_KEY: apiKey, ECHO_PROVIDER_KEY: echoKey } }, env: otelEnv });
    const running = run();
    let result;
    try {
      result = await withTemporalClient(
        testSettings(),
        (client) =>
          client.workflow.execute(applyWorkflow, {
            taskQueue,
            workflowId: applyWorkflowId(orgName),
            args: [{ connection: { baseUrl: server.url, apiKeyEnv: 'ACS_API_KEY' }, desired: withOrganizationName(example, orgName) }],
          }),
        otelEnv,
      );
    } finally {
      worker.shutdown();
      // Resolves once the worker's buffered spans have been sent.
      await running;
    }
    expect(result.applied.map((c) => c.outcome)).toEqual(Array(8).fill('created'));

    const spans = collector.spans;
    const runs = spans.filter((s) => s.name === 'RunWorkflow:applyWorkflow' && s.attributes.workflowId === applyWorkflowId(orgName));
    expect(runs, spans.map((s) => s.name).join(', ')).toHaveLength(1);
    const { traceId } = runs[0]!;
    const inTrace = spans.filter((s) => s.traceId === traceId);

    const start = inTrace.find((s) => s.name === 'StartWorkflow:applyWorkflow');
    expect(start?.service).toBe(CLIENT_SERVICE_NAME);
    expect(runs[0]!.service).toBe(WORKER_SERVICE_NAME);
    expect(runs[0]!.parentSpanId).toBe(start?.spanId);

    const activityRuns = inTrace.filter((s) => s.name.startsWith('RunActivity:'));
    expect(new Set(activityRuns.map((s) => s.name))).toEqual(new Set(['RunActivity:readOrganization', 'RunActivity:planRecorded', 'RunActivity:runSteps']));
    // Each activity runs under the workflow's span for scheduling it, which the workflow run holds.
    const scheduled = new Map(inTrace.filter((s) => s.name.startsWith('StartActivity:')).map((s) => [s.spanId, s]));
    expect(scheduled.size).toBe(activityRuns.length);
    for (const activity of activityRuns) {
      expect(scheduled.get(activity.parentSpanId)?.name).toBe(activity.name.replace('RunActivity:', 'StartActivity:'));
      expect(scheduled.get(activity.parentSpanId)?.parentSpanId).toBe(runs[0]!.spanId);
    }

    // Every request to the service came from an activity, inside its span and so in this trace.
    const http = spans.filter((s) => String(s.attributes['url.full'] ?? '').startsWith(server.url));
    expect(http.length).toBeGreaterThanOrEqual(8);
    expect(new Set(http.map((s) => s.traceId))).toEqual(new Set([traceId]));
    const activitySpanIds = new Set(activityRuns.map((s) => s.spanId));
    for (const request of http) expect(activitySpanIds, `${request.name} ${String(request.attributes['url.full'])}`).toContain(request.parentSpanId);
    expect(new Set(http.map((s) => s.attributes['http.request.method']))).toEqual(new Set(['GET', 'POST', 'PUT']));
    expect(http.every((s) => Number(s.attributes['http.response.status_code']) < 400 || s.attributes['http.response.status_code'] === 409)).toBe(true);

    const received = collector.bodies.join('\n');
    for (const secret of [apiKey, echoKey]) expect(received).not.toContain(secret);

    // The trace context rides in headers, never in commands: a traced run replays with tracing
    // and without, so turning it on or off under running workflows is safe.
    const history = await withTemporalClient(testSettings(), (client) => client.workflow.getHandle(applyWorkflowId(orgName)).fetchHistory(), {});
    await Worker.runReplayHistory({ workflowsPath, bundlerOptions: workflowBundlerOptions, replayName: 'replay-traced-untraced' }, history);
    const replayTelemetry = createTelemetry(otelEnv, { defaultServiceName: WORKER_SERVICE_NAME });
    try {
      await Worker.runReplayHistory({ workflowsPath, bundlerOptions: workflowBundlerOptions, replayName: 'replay-traced-traced', ...replayTelemetry!.workerOptions }, history);
    } finally {
      await replayTelemetry?.shutdown();
    }
  }, 180_000);
});
