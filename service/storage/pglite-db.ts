import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse, PGlite, protocol } from '@electric-sql/pglite';
// node-postgres's conversion of a JavaScript value to a parameter (the PostgreSQL backend's), so
// that both backends take the same values.
import pgUtils from 'pg/lib/utils.js';
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
    query<T>(sql: string, params?: unknown[]) {
      // Outside a transaction (PGlite's query() does the same): none may run meanwhile.
      return pg._runExclusiveTransaction(() =>
        pg._runExclusiveQuery(async () => {
          const rows = await runStatement<T>(pg, sql, params);
          await pg.syncToFs();
          return rows;
        }),
      );
    },
    async transaction<T>(fn: (tx: Queryable) => Promise<T>) {
      return pg.transaction(async () =>
        fn({
          query<R>(sql: string, params?: unknown[]) {
            return pg._runExclusiveQuery(() => runStatement<R>(pg, sql, params));
          },
        }),
      );
    },
    async close() {
      await pg.close();
    },
  };
}

/**
 * Runs one statement with the extended protocol in a single message to the database: Parse,
 * Bind, Describe, Execute and Sync at once, as node-postgres sends them. PGlite's own `query()`
 * makes six separate calls into the database for each statement (a Describe first, so that it can
 * convert the parameters by their types); this one makes one, which costs about a third less time
 * and allocation per statement (docs/performance.md, "Long-poll wake"). Parameters are converted
 * as node-postgres converts them (their types are left for PostgreSQL to infer, as node-postgres
 * does); rows are parsed with PGlite's own parsers, so they are what `query()` returns.
 * Call it holding PGlite's query lock. Errors: rejects with PGlite's `DatabaseError` (`code`).
 */
async function runStatement<T>(pg: PGlite, sql: string, params: unknown[] = []): Promise<T[]> {
  const { serialize } = protocol;
  const parts = [
    serialize.parse({ text: sql }),
    serialize.bind({ values: params.map((value) => pgUtils.prepareValue(value)) }),
    serialize.describe({ type: 'P' }),
    serialize.execute({}),
    serialize.sync(),
  ];
  const message = new Uint8Array(parts.reduce((n, part) => n + part.byteLength, 0));
  let at = 0;
  for (const part of parts) {
    message.set(part, at);
    at += part.byteLength;
  }
  const { messages } = await pg.execProtocol(message, { syncToFs: false });
  return (parse.parseResults(messages, pg.parsers)[0]?.rows ?? []) as T[];
}

/** Whether `dir` does not exist or holds nothing (a data directory to be made). */
function isEmptyOrMissing(dir: string): boolean {
  return !existsSync(dir) || readdirSync(dir).length === 0;
}
