/**
 * What the turn benchmark (bench/turns.ts) reads of an acs-server running in its own process,
 * without changing the service: the spans the service already makes (OpenTelemetry GenAI names,
 * `invoke_agent` per turn run and `execute_tool` per tool call: service/agent-loop/turns/run-turn.ts)
 * caught by a span processor of the tracer provider handed to `startServer`; every SQL statement and
 * transaction timed through a wrapper of the `Db` handed to `startServer`; and each provider
 * step timed through a wrapper of the providers. All times are `performance.now()` of this
 * process, in milliseconds.
 */
import { BasicTracerProvider, type ReadableSpan, type Span, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ReplyProvider } from '../service/agent-loop/providers/types.ts';
import type { Db, Queryable } from '../service/storage/db.ts';

/** A finished span: its name, attributes and when it began and ended. */
export interface TimedSpan {
  name: string;
  attributes: Record<string, unknown>;
  start: number;
  end: number;
}

/** The spans caught since {@link catchSpans} made its provider, and a way to wait for one. */
export interface SpanCatcher {
  /** Give it to `startServer` (`tracerProvider`). */
  provider: BasicTracerProvider;
  spans: TimedSpan[];
  /** Resolves with the first span ending from now on that `match` accepts. */
  next(match: (span: TimedSpan) => boolean): Promise<TimedSpan>;
}

let catcher: SpanCatcher | undefined;

/**
 * A tracer provider (one per process) whose processor keeps every finished span's name,
 * attributes and times (`performance.now()` read in `onStart`/`onEnd`, so they compare with this
 * process's other clocks). Not registered as the global provider: the server is given it.
 */
export function catchSpans(): SpanCatcher {
  if (catcher) return catcher;
  const spans: TimedSpan[] = [];
  const started = new WeakMap<object, number>();
  const waiters: Array<{ match: (span: TimedSpan) => boolean; resolve: (span: TimedSpan) => void }> = [];
  const processor: SpanProcessor = {
    onStart(span: Span) {
      started.set(span, performance.now());
    },
    onEnd(span: ReadableSpan) {
      const timed: TimedSpan = { name: span.name, attributes: { ...span.attributes }, start: started.get(span) ?? performance.now(), end: performance.now() };
      spans.push(timed);
      for (const waiter of waiters.filter((w) => w.match(timed))) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(timed);
      }
    },
    forceFlush: async () => {},
    shutdown: async () => {},
  };
  const provider = new BasicTracerProvider({ spanProcessors: [processor] });
  catcher = {
    provider,
    spans,
    next: (match) => new Promise((resolve) => waiters.push({ match, resolve })),
  };
  return catcher;
}

/** One statement (or transaction) as the profiler saw it. */
export interface TimedStatement {
  /**
   * The statement's first 90 characters, whitespace collapsed; for a whole transaction,
   * `(transaction) ` and its first statement's first 60 characters.
   */
  sql: string;
  start: number;
  end: number;
  /** Inside a transaction (its time is also in the transaction's). */
  inTx: boolean;
}

/** A `Db` whose statements and transactions are timed while `recording` is true. */
export interface ProfiledDb extends Db {
  recording: boolean;
  statements: TimedStatement[];
}

const label = (sql: string) => sql.replace(/\s+/g, ' ').trim().slice(0, 90);

/**
 * Wraps `db` so that, while `recording`, each statement (and each transaction as a whole) is
 * timed and kept in `statements`. The wrapper adds a `performance.now()` pair per statement.
 */
export function profiledDb(db: Db): ProfiledDb {
  const timed = (target: Queryable, inTx: boolean, first?: (sql: string) => void): Queryable => ({
    async query<T>(sql: string, params?: unknown[]): Promise<T[]> {
      first?.(sql);
      if (!profiled.recording) return target.query<T>(sql, params);
      const start = performance.now();
      try {
        return await target.query<T>(sql, params);
      } finally {
        profiled.statements.push({ sql: label(sql), start, end: performance.now(), inTx });
      }
    },
  });
  const outer = timed(db, false);
  const profiled: ProfiledDb = {
    recording: false,
    statements: [],
    query: (sql, params) => outer.query(sql, params),
    async transaction(fn) {
      if (!profiled.recording) return db.transaction(fn);
      const start = performance.now();
      let opening = '';
      try {
        return await db.transaction((tx) => fn(timed(tx, true, (sql) => void (opening ||= label(sql).slice(0, 60)))));
      } finally {
        profiled.statements.push({ sql: `(transaction) ${opening}`, start, end: performance.now(), inTx: false });
      }
    },
    close: () => db.close(),
  };
  return profiled;
}

/** A provider step as the service saw it: from the call of `step()` to its answer. */
export interface TimedStep {
  start: number;
  end: number;
}

/**
 * The providers with each `step()` timed into `steps` (the service's view of a model call: the AI
 * SDK's request building, the HTTP exchange with the model server, and the answer's parsing).
 */
export function timedProviders(providers: ReadonlyMap<string, ReplyProvider>, steps: TimedStep[]): Map<string, ReplyProvider> {
  return new Map(
    [...providers].map(([name, provider]) => {
      const step = provider.step;
      if (!step) return [name, provider];
      const wrapped: ReplyProvider = {
        reply: (request) => provider.reply(request),
        async step(request) {
          const start = performance.now();
          try {
            return await step.call(provider, request);
          } finally {
            steps.push({ start, end: performance.now() });
          }
        },
      };
      return [name, wrapped];
    }),
  );
}

/**
 * Whether a statement is the process's background work, not a turn's: the loop's claim (a tick),
 * the event sequencer and its sweep, webhook delivery, the instance heartbeat, the sweep of leases
 * of stopped processes.
 */
export function isBackground(sql: string): boolean {
  return /WITH picked AS \( SELECT agent_id, thread_id FROM agent_work|acs_sequence_events|FROM events WHERE seq IS NULL|webhook|server_instances|UPDATE agent_work w SET due_at = now\(\), lease_token = NULL/.test(sql);
}
