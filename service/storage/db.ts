/**
 * The storage seam of acs-server: the one interface every SQL statement goes through, with an
 * embedded (PGlite) and a server (PostgreSQL) implementation that run the same SQL.
 */

/** Something that runs one parameterised SQL statement ($1, $2, … placeholders). */
export interface Queryable {
  /**
   * Runs `sql` with `params` and returns the result rows.
   * Errors: rejects with the driver's error (unique violations carry `code` 23505).
   */
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
}

/** A database handle: queries, transactions and shutdown. */
export interface Db extends Queryable {
  /**
   * Runs `fn` inside one transaction: committed when `fn` resolves, rolled back when it throws
   * (the error is re-thrown). Only `tx` may be used inside `fn`.
   */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /** Closes the handle; pending work is not waited for beyond the driver's own close. */
  close(): Promise<void>;
  /** The connection pool's figures now, for the metrics; only a handle with a pool (PostgreSQL) has it. */
  poolStats?(): PoolStats;
}

/** What a connection pool holds now (`pg.Pool`'s counts). */
export interface PoolStats {
  /** Connections open, idle or in use. */
  total: number;
  /** Connections open and idle. */
  idle: number;
  /** Queries (and transactions) waiting for a connection: the pool is at its maximum. */
  waiting: number;
}

/**
 * `INSERT INTO table (…) VALUES ($1, …) ON CONFLICT (conflict) DO NOTHING` for the columns of
 * `row`, in its key order, and the parameters in that order. Output: `{ sql, params }`, for
 * `insertWithEvent` (events/log.ts), which inserts nothing and writes no event when the row's
 * unique key is taken.
 */
export function insertUnlessTaken(table: string, row: Record<string, unknown>, conflict: string): { sql: string; params: unknown[] } {
  const columns = Object.keys(row);
  return {
    sql: `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')}) ON CONFLICT (${conflict}) DO NOTHING`,
    params: Object.values(row),
  };
}

/** Whether `error` is a PostgreSQL unique violation (SQLSTATE 23505) on either driver. */
export function isUniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === '23505';
}
