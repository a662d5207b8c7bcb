/**
 * Where rate-limit counters live (contract §2; issue 21, defect 9): in this process's memory for
 * the embedded database (one process per data dir), in PostgreSQL when several processes share a
 * database, so that a deployment of N processes enforces each limit once, not N times.
 *
 * Both count in fixed windows per bucket, as `@fastify/rate-limit`'s own memory store does: a
 * bucket's window starts at its first hit and lasts `windowMs`; each hit adds its cost.
 */
import type { Queryable } from './db.ts';

/** What a hit tells: the bucket's count in its window after this hit, and the time left in the window. */
export interface RateLimitHit {
  hits: number;
  resetInMs: number;
}

/** A counter of hits per bucket in fixed windows. */
export interface RateLimitStore {
  /**
   * Adds `cost` (≥ 1) to `bucket`'s count in its current window (a new window when none is
   * running) and returns the count and the time left. `max` is the limit the caller enforces: a
   * store may answer a bucket already over it without counting further (the answer is over
   * `max` either way). Errors: rejects when storage fails (the caller lets the request through).
   */
  hit(bucket: string, cost: number, windowMs: number, max: number): Promise<RateLimitHit>;
}

/**
 * Counters in this process's memory, for at most `maxBuckets` buckets (the least recently hit
 * are forgotten first, which only ever gives a forgotten bucket a fresh window).
 */
export function createMemoryRateLimitStore(maxBuckets = 10_000): RateLimitStore {
  const buckets = new Map<string, { hits: number; resetAt: number }>();
  return {
    async hit(bucket, cost, windowMs) {
      const now = Date.now();
      let entry = buckets.get(bucket);
      if (entry === undefined || entry.resetAt <= now) entry = { hits: cost, resetAt: now + windowMs };
      else entry.hits += cost;
      // Re-inserted, so that Map order is least recently hit first.
      buckets.delete(bucket);
      buckets.set(bucket, entry);
      if (buckets.size > maxBuckets) buckets.delete(buckets.keys().next().value!);
      return { hits: entry.hits, resetInMs: entry.resetAt - now };
    },
  };
}

// One statement: a new window when there is none or it has run out, else the cost added. The
// database's clock decides, so processes whose clocks differ still share one window.
const hitStatement = `
  INSERT INTO rate_limits AS r (bucket, hits, reset_at) VALUES ($1, $2, now() + make_interval(secs => $3::float8 / 1000))
  ON CONFLICT (bucket) DO UPDATE SET
    hits = CASE WHEN r.reset_at <= now() THEN EXCLUDED.hits ELSE r.hits + EXCLUDED.hits END,
    reset_at = CASE WHEN r.reset_at <= now() THEN EXCLUDED.reset_at ELSE r.reset_at END
  RETURNING r.hits::float8 AS hits, greatest(0, extract(epoch FROM r.reset_at - now()) * 1000)::float8 AS reset_in_ms`;

/** How often (at most) a process deletes windows that ended, in milliseconds. */
const sweepEveryMs = 60_000;

interface Waiter {
  cost: number;
  resolve: (hit: RateLimitHit) => void;
  reject: (error: unknown) => void;
}

/**
 * Counters in PostgreSQL (table `rate_limits`, migration `0015_rate_limits`), shared by every
 * process on the database. Two things keep the shared count cheap for the database:
 *
 * - **One statement in flight per bucket and process.** Hits of a bucket that arrive while its
 *   statement runs wait and go together in the next one (their costs summed; each learns its own
 *   count), so a flood from one client holds one connection of the pool, not all of them, and
 *   queues on no row lock.
 * - **An exhausted bucket is refused here.** Once the database says a bucket reached `max`, it
 *   stays so until its window ends (windows are fixed), so this process answers it from memory
 *   until then: hits over the limit cost the database nothing.
 *
 * Windows that ended are deleted at most once a minute per process, in the background.
 */
export function createPostgresRateLimitStore(db: Queryable, maxBuckets = 10_000): RateLimitStore {
  const exhausted = new Map<string, { hits: number; resetAt: number }>();
  const queued = new Map<string, Waiter[]>();
  const running = new Set<string>();
  let lastSweep = Date.now();

  function sweep(): void {
    if (Date.now() - lastSweep < sweepEveryMs) return;
    lastSweep = Date.now();
    // Another process may still be in such a window by its clock; a minute of slack covers that.
    db.query(`DELETE FROM rate_limits WHERE reset_at < now() - interval '1 minute'`).catch(() => {});
    const now = Date.now();
    for (const [bucket, entry] of exhausted) if (entry.resetAt <= now) exhausted.delete(bucket);
  }

  async function flush(bucket: string, waiters: Waiter[], windowMs: number, max: number): Promise<void> {
    running.add(bucket);
    const total = waiters.reduce((sum, w) => sum + w.cost, 0);
    try {
      const rows = await db.query<{ hits: number; reset_in_ms: number }>(hitStatement, [bucket, total, windowMs]);
      const { hits, reset_in_ms: resetInMs } = rows[0]!;
      if (hits >= max) {
        if (exhausted.size >= maxBuckets) exhausted.clear();
        exhausted.set(bucket, { hits, resetAt: Date.now() + resetInMs });
      }
      // Each waiter's count is the count before the batch plus the costs up to its own.
      let counted = hits - total;
      for (const waiter of waiters) {
        counted += waiter.cost;
        waiter.resolve({ hits: counted, resetInMs });
      }
    } catch (error) {
      for (const waiter of waiters) waiter.reject(error);
    } finally {
      running.delete(bucket);
      const next = queued.get(bucket);
      if (next) {
        queued.delete(bucket);
        void flush(bucket, next, windowMs, max);
      }
    }
    sweep();
  }

  return {
    hit(bucket, cost, windowMs, max) {
      const over = exhausted.get(bucket);
      if (over !== undefined) {
        const now = Date.now();
        if (over.resetAt > now) {
          over.hits += cost;
          return Promise.resolve({ hits: over.hits, resetInMs: over.resetAt - now });
        }
        exhausted.delete(bucket);
      }
      return new Promise<RateLimitHit>((resolve, reject) => {
        const waiter = { cost, resolve, reject };
        if (!running.has(bucket)) {
          void flush(bucket, [waiter], windowMs, max);
          return;
        }
        const waiting = queued.get(bucket);
        if (waiting) waiting.push(waiter);
        else queued.set(bucket, [waiter]);
      });
    },
  };
}
