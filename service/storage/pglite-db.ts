import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import type { Db, Queryable } from './db.ts';
import { copyTemplate, pgliteTemplate, TemplateMemoryFS } from './pglite-template.ts';

/**
 * shared_buffers of the embedded database. They live in PGlite's WebAssembly memory, which never
 * shrinks, and PGlite's default (160 MB) made every embedded server ~125 MB larger from the start
 * (docs/performance.md, "Memory of the embedded database"). In memory, the pages are held by
 * PGlite's in-memory file system anyway, so a small pool costs little; on disk a page missing
 * from the pool is a system call through PGlite's file system, so the pool stays larger there.
 */
const sharedBuffers = { inMemory: '16MB', onDisk: '64MB' };

/**
 * Opens an embedded PostgreSQL (PGlite): on disk in `dataDir`, or in memory when it is undefined.
 * A database that does not exist yet starts from the prepared data directory of
 * `pglite-template.ts` instead of running `initdb` in this process (PGlite's own `initdb` when no
 * template can be had). Returns a {@link Db}. Errors: rejects when the data directory cannot be
 * opened.
 */
export async function openPgliteDb(dataDir?: string): Promise<Db> {
  const fresh = dataDir === undefined || !existsSync(join(dataDir, 'PG_VERSION'));
  const template = fresh ? await pgliteTemplate() : undefined;
  if (template && dataDir !== undefined && isEmptyOrMissing(dataDir)) await copyTemplate(template, dataDir);
  const pg = await PGlite.create({
    ...(dataDir === undefined ? (template ? { fs: new TemplateMemoryFS(template) } : {}) : { dataDir }),
    startParams: [...PGlite.defaultStartParams, '-c', `shared_buffers=${dataDir === undefined ? sharedBuffers.inMemory : sharedBuffers.onDisk}`],
  });
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

/** Whether `dir` does not exist or holds nothing (a data directory to be made). */
function isEmptyOrMissing(dir: string): boolean {
  return !existsSync(dir) || readdirSync(dir).length === 0;
}
