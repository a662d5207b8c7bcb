import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse, PGlite } from '@electric-sql/pglite';
import { serialize, type DatabaseError } from 'pg-protocol';
import { Parser } from 'pg-protocol/dist/parser.js';
// node-postgres's conversion of a JavaScript value to a parameter (the PostgreSQL backend's), so
// that both backends take the same values.
import pgUtils from 'pg/lib/utils.js';
import type { Db, Queryable } from './db.ts';
import { preparedSplit, withSplitInstantiation } from './pglite-split.ts';
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
  const options = {
    ...(dataDir === undefined ? (template ? { fs: new TemplateMemoryFS(template) } : {}) : { dataDir }),
    startParams: [...PGlite.defaultStartParams, '-c', `shared_buffers=${dataDir === undefined ? sharedBuffers.inMemory : sharedBuffers.onDisk}`],
  };
  // `--pglite-compiler mixed`: PGlite's module in two (pglite-split.ts).
  const split = preparedSplit();
  const pg = split ? await withSplitInstantiation(split, () => PGlite.create({ ...options, pgliteWasmModule: split.main })) : await PGlite.create(options);
  // Which statements may run when. A statement runs inside the database synchronously (one call
  // into its WebAssembly, see runStatement), so two statements never interleave; what must not
  // happen is a statement of `query()` running between the statements of an open transaction,
  // where it would become part of it. Transactions take turns, first come first served, and a
  // `query()` runs at once when none is open or queued, else in its turn. PGlite's own locks
  // (two promise-based mutexes per statement) are not taken on this path: their promises were a
  // tenth of the server's allocation per request.
  let taken = false;
  const turns: Array<() => void> = [];
  const waitTurn = () => new Promise<void>((resolve) => turns.push(resolve));
  const take = (): Promise<void> | undefined => {
    if (!taken) {
      taken = true;
      return undefined;
    }
    return waitTurn();
  };
  const release = () => {
    const next = turns.shift();
    if (next) next();
    else taken = false;
  };
  return {
    query<T>(sql: string, params?: unknown[]) {
      if (!taken) return runStatement<T>(pg, sql, params);
      return waitTurn().then(() => runStatement<T>(pg, sql, params)).finally(release);
    },
    async transaction<T>(fn: (tx: Queryable) => Promise<T>) {
      await take();
      try {
        return await pg.transaction(async () =>
          fn({
            query<R>(sql: string, params?: unknown[]) {
              return runStatement<R>(pg, sql, params);
            },
          }),
        );
      } finally {
        release();
      }
    },
    async close() {
      await take();
      try {
        await pg.close();
      } finally {
        release();
      }
    },
  };
}

/**
 * Runs one statement with the extended protocol in a single message to the database: Parse,
 * Bind, Describe, Execute and Sync at once, as node-postgres sends them. PGlite's own `query()`
 * makes six separate calls into the database for each statement (a Describe first, so that it can
 * convert the parameters by their types); this one makes one. The message is written and the
 * answer read with node-postgres's protocol library (`pg-protocol`), whose writer and reader work
 * on Node buffers from the shared pool: PGlite's own reader copies every string it reads into an
 * ArrayBuffer of its own, dozens per statement, and each young ArrayBuffer lengthens the next
 * young-generation collection (docs/performance.md, "Long-poll wake"). Parameters are converted as
 * node-postgres converts them (their types left for PostgreSQL to infer, as node-postgres does);
 * rows are converted with PGlite's own parsers, so they are what `query()` returns.
 * Call it in the caller's turn (see the turns in {@link openPgliteDb}): not between the statements
 * of another caller's open transaction. Errors: rejects with the statement's `DatabaseError`
 * (`code`, `constraint`, `detail`, as node-postgres raises it for the PostgreSQL backend).
 */
async function runStatement<T>(pg: PGlite, sql: string, params: unknown[] = []): Promise<T[]> {
  const message = Buffer.concat([
    serialize.parse({ text: sql }),
    serialize.bind({ values: params.map((value) => pgUtils.prepareValue(value)) }),
    serialize.describe({ type: 'P' }),
    serialize.execute({}),
    serialize.sync(),
  ]);
  const parser = new Parser();
  const messages: Array<{ name: string }> = [];
  let failure: DatabaseError | undefined;
  await pg.execProtocolRawStream(message, {
    syncToFs: false,
    // A view of the database's memory, reused for the next chunk: copied before the parser may
    // keep an unfinished message of it.
    onRawData: (chunk) =>
      parser.parse(Buffer.from(chunk), (received) => {
        if (received.name === 'error') failure ??= received as DatabaseError;
        else messages.push(received);
      }),
  });
  if (failure) throw failure;
  // The messages have the names and fields PGlite's own reader gives them (its protocol code is
  // node-postgres's), which is all parseResults looks at.
  return (parse.parseResults(messages as Parameters<typeof parse.parseResults>[0], pg.parsers)[0]?.rows ?? []) as T[];
}

/** Whether `dir` does not exist or holds nothing (a data directory to be made). */
function isEmptyOrMissing(dir: string): boolean {
  return !existsSync(dir) || readdirSync(dir).length === 0;
}
