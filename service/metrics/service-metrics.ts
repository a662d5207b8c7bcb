/**
 * The Prometheus metrics of one acs-server process (issue 42), through prom-client: Node's
 * default process metrics and the service's own, every label value from a fixed list (no
 * organization, key, name or anything a tenant typed). What each one counts, and which process
 * counts it when several share a database: docs/operating-acs-server.md, "Metrics".
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type RegistryContentType } from 'prom-client';
import { finalToolCallStatuses } from '../../api/agent-tools.ts';
import { EventTypes } from '../../api/events.ts';
import { Providers } from '../../api/schemas.ts';
import { createExposition, seriesNames } from '../../telemetry/prometheus.ts';
import type { PoolStats, Queryable } from '../storage/db.ts';
import type { ServiceMetrics } from './hooks.ts';
import { instrumentHttp } from './http-metrics.ts';

/** What {@link createServiceMetrics} reads at scrape time. */
export interface ServiceMetricsOptions {
  /** The storage: the pending deliveries are counted there at each scrape. */
  db: Queryable;
  /** The PostgreSQL pool's figures (`Db.poolStats`); absent with PGlite, which has no pool. */
  poolStats?: (() => PoolStats) | undefined;
  /** Told when a scrape's read of storage fails (the scrape still answers, that gauge keeps its last value). */
  log?: ((message: string, error: unknown) => void) | undefined;
}

/** Buckets (seconds) of request latency: from a cached read to a long poll held 30 s and past. */
const httpBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Buckets (seconds) of a webhook attempt: a receiver has 15 s (contract §9). */
const webhookBuckets = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30];
/** Buckets (seconds) of a reply: an echo in milliseconds, a model's turn of tools in minutes. */
const turnBuckets = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** `value` when it is one of `known`, else `other`: a label never takes a value outside a fixed list. */
function bounded(value: string, known: ReadonlySet<string>): string {
  return known.has(value) ? value : 'other';
}

const providers = new Set<string>(Providers);
const eventTypes = new Set<string>(Object.keys(EventTypes));
const toolStatuses = new Set<string>(finalToolCallStatuses);

/**
 * Creates the metrics of one process: a registry of its own (never prom-client's global one, so
 * that servers started side by side in one process — tests — keep their figures apart), Node's
 * default metrics in it, and the service's metrics. Output: {@link ServiceMetrics}.
 */
export function createServiceMetrics(options: ServiceMetricsOptions): ServiceMetrics {
  const registry = new Registry<RegistryContentType>();
  const registers = [registry];
  collectDefaultMetrics({ register: registry });

  const requests = new Counter({
    name: 'acs_http_requests_total',
    help: 'HTTP requests answered, by route template (unmatched: no route), method and status.',
    labelNames: ['route', 'method', 'status'] as const,
    registers,
  });
  const requestSeconds = new Histogram({
    name: 'acs_http_request_duration_seconds',
    help: 'Time from a request\'s arrival to its answer, by route template and method (long polls and streams included).',
    labelNames: ['route', 'method'] as const,
    buckets: httpBuckets,
    registers,
  });
  const rateLimited = new Counter({ name: 'acs_rate_limited_total', help: 'Requests refused with 429 rate_limited (the per-key rate limit, MCP batches included).', registers });
  const heldWaits = new Gauge({
    name: 'acs_held_waits',
    help: 'Waits held now: thread_poll, event_poll, event_stream, mcp_wait.',
    labelNames: ['kind'] as const,
    registers,
  });
  const heldWaitsRefused = new Counter({
    name: 'acs_held_waits_refused_total',
    help: 'Waits refused with 429 too_many_waits, by the bound they would have passed: per_key, per_org or per_process.',
    labelNames: ['reason'] as const,
    registers,
  });
  const eventsWritten = new Counter({
    name: 'acs_events_written_total',
    help: 'Events of the organizations\' logs numbered by this process, by type (each event is numbered by one process).',
    labelNames: ['type'] as const,
    registers,
  });
  const deliveries = new Counter({
    name: 'acs_webhook_deliveries_total',
    help: 'Webhook delivery attempts made by this process, by outcome: delivered, retry, failed, disabled.',
    labelNames: ['outcome'] as const,
    registers,
  });
  const deliverySeconds = new Histogram({ name: 'acs_webhook_delivery_duration_seconds', help: 'Time of a webhook delivery attempt\'s request, until the receiver\'s answer.', buckets: webhookBuckets, registers });
  const log = options.log ?? (() => {});
  new Gauge({
    name: 'acs_webhook_deliveries_pending',
    help: 'Webhook deliveries waiting for an attempt (due or scheduled), read from storage at each scrape: the whole database\'s, the same on every process.',
    registers,
    async collect() {
      try {
        // The partial index webhook_deliveries_due holds exactly these rows.
        const [row] = await options.db.query<{ n: string | number }>(`SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending'`);
        this.set(Number(row?.n ?? 0));
      } catch (error) {
        log('metrics: counting the pending webhook deliveries failed', error);
      }
    },
  });
  const turns = new Counter({
    name: 'acs_agent_turns_total',
    help: 'Replies of the agent loop (one provider call without tools, a turn of steps with tools), by provider and outcome: replied, discarded, failed, rate_limited, key_refused.',
    labelNames: ['provider', 'outcome'] as const,
    registers,
  });
  const turnSeconds = new Histogram({
    name: 'acs_agent_turn_duration_seconds',
    help: 'Time this process worked on a reply, from the claim of its thread to its outcome (a turn that waited for an answer: from its resumption).',
    labelNames: ['provider'] as const,
    buckets: turnBuckets,
    registers,
  });
  const tokens = new Counter({
    name: 'acs_provider_tokens_total',
    help: 'Tokens of provider calls as the providers reported them, by provider and kind: input or output.',
    labelNames: ['provider', 'kind'] as const,
    registers,
  });
  const toolCalls = new Counter({
    name: 'acs_tool_calls_total',
    help: 'Tool calls of agents\' turns that reached a final state, by server (team: the team tools and ask; remote: an agent\'s MCP servers) and outcome: completed, failed, rejected.',
    labelNames: ['server', 'outcome'] as const,
    registers,
  });
  if (options.poolStats) {
    const poolStats = options.poolStats;
    new Gauge({
      name: 'acs_db_pool_connections',
      help: 'The PostgreSQL connection pool of this process: total (open connections), idle, waiting (queries waiting for a connection).',
      labelNames: ['state'] as const,
      registers,
      collect() {
        const stats = poolStats();
        this.set({ state: 'total' }, stats.total);
        this.set({ state: 'idle' }, stats.idle);
        this.set({ state: 'waiting' }, stats.waiting);
      },
    });
  }

  const expose = createExposition(registry);
  return {
    instrument(app) {
      instrumentHttp(app, {
        request: (route, method, status, seconds) => {
          requests.inc({ route, method, status });
          requestSeconds.observe({ route, method }, seconds);
        },
        rateLimited: () => rateLimited.inc(),
      });
    },
    heldWaits: {
      held: (kind, delta) => (delta >= 0 ? heldWaits.inc({ kind }, delta) : heldWaits.dec({ kind }, -delta)),
      refused: (reason) => heldWaitsRefused.inc({ reason }),
    },
    countNumbered(hub) {
      return hub.onSequenced((_orgId, events) => {
        for (const event of events) {
          eventsWritten.inc({ type: bounded(event.type, eventTypes) });
          if (event.type === 'tool_call.finished') {
            const call = event.data as { server?: string | null; status?: string };
            toolCalls.inc({ server: call.server == null ? 'team' : 'remote', outcome: bounded(String(call.status), toolStatuses) });
          }
        }
      });
    },
    webhookAttempt(outcome, seconds) {
      deliveries.inc({ outcome });
      if (seconds !== undefined) deliverySeconds.observe(seconds);
    },
    agentTurn(provider, outcome, seconds) {
      const label = bounded(provider, providers);
      turns.inc({ provider: label, outcome });
      turnSeconds.observe({ provider: label }, seconds);
    },
    providerTokens(provider, inputTokens, outputTokens) {
      const label = bounded(provider, providers);
      if (inputTokens > 0) tokens.inc({ provider: label, kind: 'input' }, inputTokens);
      if (outputTokens > 0) tokens.inc({ provider: label, kind: 'output' }, outputTokens);
    },
    expose,
    names: () => seriesNames(registry),
  };
}
