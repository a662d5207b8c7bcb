import { mkdir } from 'node:fs/promises';
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
 * Opens the storage chosen by `options` (contract §6) and brings its schema up to date.
 * Errors: rejects when the database cannot be reached or a migration fails.
 */
export async function openDb(options: StorageOptions): Promise<Db> {
  let db: Db;
  if (options.databaseUrl) db = await openPostgresDb(options.databaseUrl);
  else if (options.inMemory || options.dataDir === undefined) db = await openPgliteDb();
  else {
    await mkdir(options.dataDir, { recursive: true });
    // PGlite's files get their own subfolder: the data dir also holds the encryption key file.
    db = await openPgliteDb(`${options.dataDir}/pglite`);
  }
  try {
    await migrate(db);
  } catch (error) {
    await db.close().catch(() => {});
    throw error;
  }
  return db;
}
