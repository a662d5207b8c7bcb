/**
 * Opt-in OpenTelemetry tracing of the Temporal side, through the SDK's
 * `@temporalio/interceptors-opentelemetry`: the client's start of a workflow, the workflow run,
 * each activity it schedules and each activity's run, and (in the worker) every HTTP request an
 * activity sends with `fetch` (`@opentelemetry/instrumentation-undici`), all in one trace.
 *
 * Off unless the standard variables ask for it: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as
 * is) or `OTEL_EXPORTER_OTLP_ENDPOINT` (`/v1/traces` appended). `OTEL_SDK_DISABLED=true` or
 * `OTEL_TRACES_EXPORTER=none` turns it off again; `OTEL_SERVICE_NAME` names the service;
 * `OTEL_EXPORTER_OTLP_HEADERS` / `OTEL_EXPORTER_OTLP_TRACES_HEADERS` add headers (an API key of a
 * hosted backend). Spans go as OTLP/HTTP with JSON bodies (a collector's port 4318);
 * `OTEL_EXPORTER_OTLP_PROTOCOL` is not read.
 *
 * The OpenTelemetry packages are the 1.x SDK line (`@opentelemetry/sdk-trace-base` 1.30): the one
 * `@temporalio/interceptors-opentelemetry` 1.24 is built against.
 */
import { createRequire } from 'node:module';
import type { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import type { Resource } from '@opentelemetry/resources';
import type { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import type { ClientInterceptors } from '@temporalio/client';
import {
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
  makeWorkflowExporter,
} from '@temporalio/interceptors-opentelemetry';
import type { WorkerOptions } from '@temporalio/worker';
import { otlpTracing } from '../telemetry/otlp.ts';

/** Default `service.name` of a worker's spans. */
export const WORKER_SERVICE_NAME = 'teamctl-worker';

/** Default `service.name` of the CLI's spans (the side that starts workflows). */
export const CLIENT_SERVICE_NAME = 'teamctl';

/** What {@link createTelemetry} needs besides the environment. */
export interface TelemetryOptions {
  /** `service.name` when `OTEL_SERVICE_NAME` is not set. */
  defaultServiceName: string;
  /**
   * Trace every `fetch` of this process (undici's diagnostics channels) as a child of the span
   * active when it is sent: on in a worker, where the activities' calls to the service are.
   */
  instrumentHttp?: boolean;
}

/** Tracing that is on: its OpenTelemetry pieces, what to add to a worker and a client, and how to end it. */
export interface Telemetry {
  /** Where spans are sent (OTLP/HTTP, JSON). */
  endpoint: string;
  serviceName: string;
  resource: Resource;
  /** Not registered as the global provider: every tracer is handed over explicitly. */
  provider: BasicTracerProvider;
  exporter: OTLPTraceExporter;
  /** To spread into `Worker.create`: the workflow interceptors module, the activity interceptors and the sink of workflow spans. */
  workerOptions: Required<Pick<WorkerOptions, 'interceptors' | 'sinks'>>;
  /** For `new Client({ interceptors })`: starting a workflow opens the trace its run continues. */
  clientInterceptors: ClientInterceptors;
  /**
   * Stops tracing HTTP, exports the spans still buffered and closes the exporter. Never rejects
   * (an unreachable collector costs at most the exporter's timeout); later calls return the first
   * call's promise.
   */
  shutdown(): Promise<void>;
}

// The module the worker bundles into the workflow sandbox: it exports `interceptors` (inbound,
// outbound, internals) and imports only what is safe there. It is the one the SDK's own
// OpenTelemetryPlugin uses, so no workflow file of ours is needed for it.
const workflowInterceptorsModule = createRequire(import.meta.url).resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors');

/**
 * Reads whether and where to trace from `env` and, when tracing is on, builds the tracer
 * provider, its resource (`service.name` from `OTEL_SERVICE_NAME`, else
 * `options.defaultServiceName`), the OTLP/HTTP exporter behind a batching processor, the worker
 * options and client interceptors that use them, and, with `options.instrumentHttp`, starts
 * tracing this process's `fetch` calls (until `shutdown()`).
 *
 * Returns undefined when tracing is off: no endpoint variable set, `OTEL_SDK_DISABLED=true`, or
 * `OTEL_TRACES_EXPORTER=none`. Nothing is sent until the first span ends. Errors:
 * `invalid_usage` when an endpoint variable is not an http(s) URL.
 */
export function createTelemetry(env: NodeJS.ProcessEnv, options: TelemetryOptions): Telemetry | undefined {
  const tracing = otlpTracing(env, options.defaultServiceName);
  if (!tracing) return undefined;
  // One processor for both the spans made in this process and those the workflow sandbox hands
  // over through its sink, so a single flush at shutdown sends them all.
  const { endpoint, serviceName, resource, exporter, processor, provider } = tracing;
  const activityTracer = provider.getTracer('@temporalio/interceptor-activity');
  const clientTracer = provider.getTracer('@temporalio/interceptor-client');
  const stopHttp = options.instrumentHttp
    ? registerInstrumentations({ tracerProvider: provider, instrumentations: [new UndiciInstrumentation()] })
    : undefined;

  let closing: Promise<void> | undefined;
  return {
    endpoint,
    serviceName,
    resource,
    provider,
    exporter,
    workerOptions: {
      interceptors: {
        workflowModules: [workflowInterceptorsModule],
        activity: [
          (ctx) => ({
            inbound: new OpenTelemetryActivityInboundInterceptor(ctx, { tracer: activityTracer }),
            outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
          }),
        ],
      },
      sinks: { exporter: makeWorkflowExporter(processor, resource) },
    },
    clientInterceptors: { workflow: [new OpenTelemetryWorkflowClientInterceptor({ tracer: clientTracer })] },
    shutdown() {
      closing ??= (async () => {
        stopHttp?.();
        // Tracing must never turn a clean stop of the worker or the CLI into a failure.
        await provider.shutdown().catch(() => undefined);
      })();
      return closing;
    },
  };
}
