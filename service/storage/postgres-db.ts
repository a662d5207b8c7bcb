import pg from 'pg';
import type { Db, Queryable } from './db.ts';

/**
 * Connects to a PostgreSQL server through a `pg` connection pool.
 * Input: a connection URL (`postgres://user:pass@host:5432/db`). Returns a {@link Db}.
 * Errors: queries reject with the driver's error when the server is unreachable.
 */
export async function openPostgresDb(databaseUrl: string): Promise<Db> {
  const pool = new pg.Pool({ connectionString: databaseUrl });
  // An idle client losing its connection must not crash the process; the next query reports it.
  pool.on('error', () => {});
  return {
    async query<T>(sql: string, params?: unknown[]) {
      return (await pool.query(sql, params)).rows as T[];
    },
    async transaction<T>(fn: (tx: Queryable) => Promise<T>) {
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
    },
    async close() {
      await pool.end();
    },
  };
}
