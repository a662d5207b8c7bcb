import pg from 'pg';
import pRetry from 'p-retry';
import type { Db, Queryable } from './db.ts';

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
 * PostgreSQL aborts them as a deadlock victim or a serialization failure.
 * Errors: queries reject with the driver's error when the server is unreachable, and a
 * transaction with its last attempt's error.
 */
export async function openPostgresDb(databaseUrl: string): Promise<Db> {
  const pool = new pg.Pool({ connectionString: databaseUrl });
  // An idle client losing its connection must not crash the process; the next query reports it.
  pool.on('error', () => {});
  return {
    async query<T>(sql: string, params?: unknown[]) {
      return (await pool.query(sql, params)).rows as T[];
    },
    // Every transaction function of the service only reads and writes through `tx` (caches and
    // notifications are touched after the commit), so running it again is safe.
    async transaction<T>(fn: (tx: Queryable) => Promise<T>) {
      return pRetry(() => attempt(fn), {
        retries: TRANSACTION_RETRIES,
        minTimeout: 5,
        maxTimeout: 200,
        randomize: true,
        shouldRetry: ({ error }) => RETRYABLE.has((error as { code?: string }).code ?? ''),
      });
    },
    async close() {
      await pool.end();
    },
  };

  async function attempt<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const result = await fn({
        async query<R>(sql: string, params?: unknown[]) {
          return (await client.query(sql, params)).rows as R[];
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
