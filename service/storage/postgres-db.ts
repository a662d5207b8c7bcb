import pg from 'pg';
import pRetry from 'p-retry';
import type { Db, Queryable } from './db.ts';
import { createStatementNames, type StatementNames } from './prepared-statements.ts';

/**
 * SQLSTATEs after which PostgreSQL asks the client to run the transaction again: 40P01
 * deadlock_detected (two transactions took the same rows in opposite orders: a PATCH of an
 * agent and a PUT of its organization's provider key both wake work rows), 40001
 * serialization_failure. Nothing of the failed attempt was kept.
 */
const RETRYABLE = new Set(['40P01', '40001']);

/** How often a transaction that failed with a {@link RETRYABLE} code is run again. */
export const TRANSACTION_RETRIES = 4;

/**
 * Connects to a PostgreSQL server through a `pg` connection pool.
 * Input: a connection URL (`postgres://user:pass@host:5432/db`). Returns a {@link Db} whose
 * transactions are run again (up to {@link TRANSACTION_RETRIES} times, after 5–200 ms) when
 * PostgreSQL aborts them as a deadlock victim or a serialization failure. Statements run often
 * become named prepared statements (storage/prepared-statements.ts); a statement or transaction
 * that fails because a prepared one went stale, or because a pooler does not keep them, is run
 * again unnamed.
 * Errors: queries reject with the driver's error when the server is unreachable, and a
 * transaction with its last attempt's error.
 */
export async function openPostgresDb(databaseUrl: string): Promise<Db> {
  const pool = new pg.Pool({ connectionString: databaseUrl });
  // An idle client losing its connection must not crash the process; the next query reports it.
  pool.on('error', () => {});
  const names = createStatementNames();
  // Failures of a transaction's statement that a run unnamed would not meet (see runNamed).
  const renamed = new WeakSet<object>();
  return {
    async query<T>(sql: string, params?: unknown[]) {
      return (await runNamed(names, sql, params, (config) => pool.query(config))) as T[];
    },
    // Every transaction function of the service only reads and writes through `tx` (caches and
    // notifications are touched after the commit), so running it again is safe.
    async transaction<T>(fn: (tx: Queryable) => Promise<T>) {
      return pRetry(() => attempt(fn), {
        retries: TRANSACTION_RETRIES,
        minTimeout: 5,
        maxTimeout: 200,
        randomize: true,
        shouldRetry: ({ error }) => RETRYABLE.has((error as { code?: string }).code ?? '') || renamed.has(error),
      });
    },
    async close() {
      await pool.end();
    },
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
  };

  async function attempt<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const result = await fn({
        async query<R>(sql: string, params?: unknown[]) {
          const config = names.config(sql, params);
          try {
            return (await client.query(config)).rows as R[];
          } catch (error) {
            // The transaction is aborted: run it again whole, this statement unnamed.
            if (error !== null && typeof error === 'object' && names.retryUnnamed(config, error)) renamed.add(error);
            throw error;
          }
        },
      });
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }
}

/**
 * Runs `sql` through `run` as {@link StatementNames.config} names it, and once more unnamed when
 * the named run failed in a way {@link StatementNames.retryUnnamed} recognises. A failed
 * statement outside a transaction changed nothing, so running it again is safe.
 * Output: the result rows. Errors: the driver's error.
 */
async function runNamed(names: StatementNames, sql: string, params: unknown[] | undefined, run: (config: pg.QueryConfig) => Promise<pg.QueryResult>): Promise<unknown[]> {
  const config = names.config(sql, params);
  try {
    return (await run(config)).rows;
  } catch (error) {
    if (!names.retryUnnamed(config, error)) throw error;
    return (await run({ text: sql, values: params })).rows;
  }
}
