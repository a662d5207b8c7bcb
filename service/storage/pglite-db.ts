import { PGlite } from '@electric-sql/pglite';
import type { Db, Queryable } from './db.ts';

/**
 * Opens an embedded PostgreSQL (PGlite): on disk in `dataDir`, or in memory when it is undefined.
 * Returns a {@link Db}. Errors: rejects when the data directory cannot be opened.
 */
export async function openPgliteDb(dataDir?: string): Promise<Db> {
  const pg = dataDir === undefined ? await PGlite.create() : await PGlite.create(dataDir);
  return {
    async query<T>(sql: string, params?: unknown[]) {
      return (await pg.query<T>(sql, params)).rows;
    },
    async transaction<T>(fn: (tx: Queryable) => Promise<T>) {
      return pg.transaction(async (tx) =>
        fn({
          async query<R>(sql: string, params?: unknown[]) {
            return (await tx.query<R>(sql, params)).rows;
          },
        }),
      );
    },
    async close() {
      await pg.close();
    },
  };
}
