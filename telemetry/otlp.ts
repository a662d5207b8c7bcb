/**
 * Opt-in OpenTelemetry tracing over OTLP/HTTP, configured by the standard variables — shared by
 * the worker and the CLI (temporal/telemetry.ts) and acs-server (service/telemetry.ts).
 *
 * Off unless the environment asks for it: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as is) or
 * `OTEL_EXPORTER_OTLP_ENDPOINT` (`/v1/traces` appended). `OTEL_SDK_DISABLED=true` or
 * `OTEL_TRACES_EXPORTER=none` turns it off again; `OTEL_SERVICE_NAME` names the service;
 * `OTEL_EXPORTER_OTLP_HEADERS` / `OTEL_EXPORTER_OTLP_TRACES_HEADERS` add headers (an API key of a
 * hosted backend). Spans go as OTLP/HTTP with JSON bodies (a collector's port 4318);
 * `OTEL_EXPORTER_OTLP_PROTOCOL` is not read.
 */
import { context, propagation } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ToolkitError } from '../errors/catalogue.ts';

let contextInstalled = false;

/**
 * Installs the global context manager and W3C propagator, once per process: spans then find their
 * parents across `await`s and across the headers of requests. Left in place (they hold no state);
 * when an SDK preloaded by the user already set them, the API keeps those, which carry context
 * just as well.
 */
export function installContextPropagation(): void {
  if (contextInstalled) return;
  contextInstalled = true;
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
}

function isTrue(value: string | undefined): boolean {
  return value?.trim().toLowerCase() === 'true';
}

function checkedUrl(url: string, variable: string): string {
  // `collector:4318` parses as a URL of scheme `collector:`; only HTTP can carry OTLP/HTTP.
  const parsed = URL.parse(url);
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
    throw new ToolkitError('invalid_usage', `${variable} is not an http(s) URL: "${url}"`);
  }
  return parsed.toString();
}

/** The traces URL the environment names, or undefined when it names none. */
function tracesEndpoint(env: NodeJS.ProcessEnv): string | undefined {
  const specific = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (specific) return checkedUrl(specific, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  // The specification appends the signal's path to whatever path the base already has.
  if (base) return checkedUrl(`${base.replace(/\/+$/, '')}/v1/traces`, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  return undefined;
}

/** `k1=v1,k2=v2` (values percent-encoded), as the OTLP exporter variables write headers. */
function parseHeaders(raw: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of raw?.split(',') ?? []) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    const key = pair.slice(0, at).trim();
    const value = pair.slice(at + 1).trim();
    try {
      headers[key] = decodeURIComponent(value);
    } catch {
      headers[key] = value;
    }
  }
  return headers;
}

/** The pieces of tracing that is on: where spans go, under which name, and the provider that makes them. */
export interface OtlpTracing {
  /** Where spans are sent (OTLP/HTTP, JSON). */
  endpoint: string;
  serviceName: string;
  resource: Resource;
  exporter: OTLPTraceExporter;
  /** The one batching processor: a flush at shutdown sends every span. */
  processor: BatchSpanProcessor;
  /** Not registered as the global provider by this function. */
  provider: BasicTracerProvider;
}

/**
 * Reads whether and where to trace from `env` and, when tracing is on, installs context
 * propagation and builds the exporter, its batching processor and a tracer provider with the
 * resource (`service.name` from `OTEL_SERVICE_NAME`, else `defaultServiceName`). Output: the pieces,
 * or undefined when tracing is off (no endpoint variable, `OTEL_SDK_DISABLED=true`,
 * `OTEL_TRACES_EXPORTER=none`). Nothing is sent until the first span ends. Errors: `invalid_usage`
 * when an endpoint variable is not an http(s) URL.
 */
export function otlpTracing(env: NodeJS.ProcessEnv, defaultServiceName: string): OtlpTracing | undefined {
  if (isTrue(env.OTEL_SDK_DISABLED) || env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none') return undefined;
  const endpoint = tracesEndpoint(env);
  if (!endpoint) return undefined;
  installContextPropagation();
  const serviceName = env.OTEL_SERVICE_NAME?.trim() || defaultServiceName;
  const resource = Resource.default().merge(new Resource({ 'service.name': serviceName }));
  const exporter = new OTLPTraceExporter({
    url: endpoint,
    headers: { ...parseHeaders(env.OTEL_EXPORTER_OTLP_HEADERS), ...parseHeaders(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS) },
  });
  const processor = new BatchSpanProcessor(exporter);
  const provider = new BasicTracerProvider({ resource, spanProcessors: [processor] });
  return { endpoint, serviceName, resource, exporter, processor, provider };
}
