/**
 * The embedded database's prepared data directory (service/storage/pglite-template.ts): made once
 * in a child process, then copied into every new embedded database — in memory and on disk —
 * instead of running `initdb`; still whole when its empty directories were lost on the way (npm
 * packs none).
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, rmdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPgliteDb } from '../../service/storage/pglite-db.ts';
import { pgliteTemplate, TEMPLATE_DIR_ENV, TEMPLATE_SWITCH_ENV } from '../../service/storage/pglite-template.ts';

let cache: string;
let template: string;
const saved = { dir: process.env[TEMPLATE_DIR_ENV], switch: process.env[TEMPLATE_SWITCH_ENV] };

/** Removes every empty directory under `dir` (as `npm pack` leaves them out); returns how many. */
async function dropEmptyDirectories(dir: string): Promise<number> {
  let dropped = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const path = join(dir, entry.name);
    dropped += await dropEmptyDirectories(path);
    if ((await readdir(path)).length === 0) {
      await rmdir(path);
      dropped++;
    }
  }
  return dropped;
}

/** What an embedded database answers about itself: its WAL segment size (initdb's choice) and a table made in it. */
async function probe(dataDir?: string): Promise<{ wal: string; rows: number }> {
  const db = await openPgliteDb(dataDir);
  try {
    const [{ wal_segment_size: wal }] = (await db.query<{ wal_segment_size: string }>('SHOW wal_segment_size')) as [{ wal_segment_size: string }];
    await db.query('CREATE TABLE IF NOT EXISTS probe (n int)');
    await db.query('INSERT INTO probe VALUES (1)');
    const [{ count }] = (await db.query<{ count: number }>('SELECT count(*)::int AS count FROM probe')) as [{ count: number }];
    return { wal, rows: count };
  } finally {
    await db.close();
  }
}

beforeAll(async () => {
  cache = await mkdtemp(join(tmpdir(), 'acs-template-'));
  process.env[TEMPLATE_DIR_ENV] = cache;
  delete process.env[TEMPLATE_SWITCH_ENV];
  template = (await pgliteTemplate())!;
}, 120_000);

afterAll(async () => {
  for (const [name, value] of [[TEMPLATE_DIR_ENV, saved.dir], [TEMPLATE_SWITCH_ENV, saved.switch]] as const) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  await rm(cache, { recursive: true, force: true });
});

describe('PGlite template', () => {
  it('template: made once in the cache directory, with its data directory and the manifest of its directories', async () => {
    expect(template.startsWith(cache)).toBe(true);
    expect(existsSync(join(template, 'data', 'PG_VERSION'))).toBe(true);
    expect(existsSync(join(template, 'dirs.json'))).toBe(true);
    // Asked again, the same template, not a second one.
    expect(await pgliteTemplate()).toBe(template);
    expect((await readdir(cache)).filter((name) => !name.startsWith('.'))).toHaveLength(1);
  });

  it('template: an in-memory database and a new data dir start from it (1 MB WAL segments, which PGlite\'s own initdb does not make), even with its empty directories lost', async () => {
    expect(await dropEmptyDirectories(join(template, 'data'))).toBeGreaterThan(0);
    expect(await probe()).toEqual({ wal: '1MB', rows: 1 });
    const dataDir = join(cache, 'data-dir', 'pglite');
    expect(await probe(dataDir)).toEqual({ wal: '1MB', rows: 1 });
    // A restart finds the data dir it made and keeps what was written.
    expect(await probe(dataDir)).toEqual({ wal: '1MB', rows: 2 });
  }, 120_000);

  it('template: ACS_PGLITE_TEMPLATE=off runs initdb in the process instead (16 MB WAL segments)', async () => {
    process.env[TEMPLATE_SWITCH_ENV] = 'off';
    try {
      expect(await pgliteTemplate()).toBeUndefined();
      expect(await probe()).toEqual({ wal: '16MB', rows: 1 });
    } finally {
      delete process.env[TEMPLATE_SWITCH_ENV];
    }
  }, 120_000);
});
