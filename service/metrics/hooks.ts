/**
 * What the code of acs-server tells its metrics (issue 42; docs/operating-acs-server.md,
 * "Metrics"): the hooks of `ServiceMetrics`, made by `createServiceMetrics`
 * (service-metrics.ts) when the server runs with `--metrics-listen`, and passed down as an
 * optional dependency (`DomainDeps.metrics`, `buildApp`'s `metrics`, the held waits' observer).
 * Without metrics nothing here exists and no hook costs anything but an optional call.
 *
 * No hook takes an organization id, a key, a name or anything a tenant typed: every label value
 * comes from a fixed list (cardinality and privacy); per-organization figures are the usage API's.
 */
import type { FastifyInstance } from 'fastify';
import type { HeldWaitObserver } from '../events/held-waits.ts';

/** What one attempt of a webhook delivery came to (`acs_webhook_deliveries_total{outcome}`). */
export const WebhookOutcomes = {
  /** The receiver answered 2xx. */
  delivered: 'delivered',
  /** It failed; another attempt is scheduled. */
  retry: 'retry',
  /** It failed and was the last attempt (or a manual redelivery, which is not retried). */
  failed: 'failed',
  /** The receiver answered 410 Gone: the webhook is disabled. */
  disabled: 'disabled',
} as const;
export type WebhookOutcome = (typeof WebhookOutcomes)[keyof typeof WebhookOutcomes];

/**
 * How a reply of the agent loop ended (`acs_agent_turns_total{outcome}`): one provider call for an
 * agent without tools, a whole turn of steps for one with tools.
 */
export const TurnOutcomes = {
  /** The reply was posted. */
  replied: 'replied',
  /** The provider answered but the reply was not posted: another process had answered the message, or its thread was deleted meanwhile. */
  discarded: 'discarded',
  /** The provider call failed (an error, a timeout, an empty answer) or the turn failed; retried with backoff. */
  failed: 'failed',
  /** The provider answered 429; retried when it said. */
  rate_limited: 'rate_limited',
  /** The provider refused the organization's key (401/403); the agent waits for a new key. */
  key_refused: 'key_refused',
} as const;
export type TurnOutcome = (typeof TurnOutcomes)[keyof typeof TurnOutcomes];

/** The hub of numbered events, as far as the metrics need it (events/hub.ts `EventHub.onSequenced`). */
export interface NumberedEvents {
  onSequenced(listener: (orgId: string, events: readonly { type: string; data: unknown }[]) => void): () => void;
}

/** The metrics of one acs-server process: its hooks, and the exposition for its listener. */
export interface ServiceMetrics {
  /** Counts every request of `app` by its route's template, method and status, and its 429 `rate_limited` refusals (service/metrics/http-metrics.ts). Call before any route or hook is added. */
  instrument(app: FastifyInstance): void;
  /** Told of held waits taken, given back and refused (events/held-waits.ts). */
  readonly heldWaits: HeldWaitObserver;
  /**
   * Counts the events `hub` numbers in this process (`acs_events_written_total{type}`), and the tool
   * calls among them that reached a final state (`tool_call.finished`: `acs_tool_calls_total`).
   * Output: the unsubscribe.
   */
  countNumbered(hub: NumberedEvents): () => void;
  /** One attempt of a webhook delivery, recorded; `seconds` is how long its request took (undefined when none was sent). */
  webhookAttempt(outcome: WebhookOutcome, seconds: number | undefined): void;
  /** A reply of the agent loop ended with `outcome` after `seconds` of this process's work on its claimed row. */
  agentTurn(provider: string, outcome: TurnOutcome, seconds: number): void;
  /** Tokens one provider call cost (what it reported; a paid failure too). */
  providerTokens(provider: string, inputTokens: number, outputTokens: number): void;
  /** The exposition of every metric, in the format `accept` prefers (telemetry/prometheus.ts). */
  expose(accept: string | undefined): Promise<{ contentType: string; body: string }>;
  /** The names of the series this process exports, as queries name them (`_bucket`, `_sum`, `_count` of histograms): the dashboards' test compares against them. */
  names(): string[];
}
