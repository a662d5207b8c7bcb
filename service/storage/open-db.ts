import { mkdir } from 'node:fs/promises';
import { ServiceError } from '../../errors/catalogue.ts';
import { lockDataDir, type DataDirLock } from './data-dir-lock.ts';
import type { Db } from './db.ts';
import { migrate } from './migrations.ts';
import { openPgliteDb } from './pglite-db.ts';
import { openPostgresDb } from './postgres-db.ts';

/** Where the data lives: PostgreSQL when `databaseUrl` is set, else PGlite on `dataDir`, else in memory. */
export interface StorageOptions {
  databaseUrl?: string | undefined;
  dataDir?: string | undefined;
  inMemory?: boolean | undefined;
}

/**
 * `db` bound to the data dir's lock: closing it releases the lock, and once the lock is lost
 * (`compromised`: another process may be writing the same files) every statement fails with
 * `unavailable` rather than writing beside that process.
 */
function guardedByLock(db: Db, lock: DataDirLock): Db {
  const lost = () => new ServiceError('unavailable', 'the lock of the data directory was lost: another process may be using it; restart this server');
  const check = () => {
    if (lock.compromised) throw lost();
  };
  return {
    // Not async: one promise fewer per statement.
    query(sql, params) {
      return lock.compromised ? Promise.reject(lost()) : db.query(sql, params);
    },
    async transaction(fn) {
      check();
      return db.transaction(fn);
    },
    async close() {
      try {
        await db.close();
      } finally {
        await lock.release();
      }
    },
  };
}

/**
 * Opens the storage chosen by `options` (contract §6) and brings its schema up to date. The
 * embedded database on disk is locked for this process until `close()` (data-dir-lock.ts).
 * Errors: rejects when the database cannot be reached or a migration fails;
 * `DataDirLockedError` when another process holds the data directory.
 */
export async function openDb(options: StorageOptions): Promise<Db> {
  let db: Db;
  if (options.databaseUrl) db = await openPostgresDb(options.databaseUrl);
  else if (options.inMemory || options.dataDir === undefined) db = await openPgliteDb();
  else {
    await mkdir(options.dataDir, { recursive: true });
    // One process per data dir (data-dir-lock.ts): taken before PGlite reads a page.
    const lock = await lockDataDir(options.dataDir);
    try {
      // PGlite's files get their own subfolder: the data dir also holds the encryption key file.
      db = guardedByLock(await openPgliteDb(`${options.dataDir}/pglite`), lock);
    } catch (error) {
      await lock.release();
      throw error;
    }
  }
  try {
    await migrate(db);
  } catch (error) {
    await db.close().catch(() => {});
    throw error;
  }
  return db;
}
