/**
 * The rate-limit counters (service/storage/rate-limit-store.ts): fixed windows per bucket, costs,
 * and — for the PostgreSQL store — hits that arrive together counted exactly once each.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../service/storage/db.ts';
import { openDb } from '../../service/storage/open-db.ts';
import { createMemoryRateLimitStore, createPostgresRateLimitStore, type RateLimitStore } from '../../service/storage/rate-limit-store.ts';
import { createTestDatabase, testDatabaseUrl, type TestDatabase } from '../support/postgres.ts';

function behavesAsFixedWindows(name: string, makeStore: () => RateLimitStore) {
  it(`${name}: counts the costs of a bucket in its window, each bucket apart, and starts a new window when one ends`, async () => {
    const store = makeStore();
    expect((await store.hit('a', 1, 60_000, 100)).hits).toBe(1);
    expect((await store.hit('a', 5, 60_000, 100)).hits).toBe(6);
    expect((await store.hit('b', 1, 60_000, 100)).hits).toBe(1);
    const left = (await store.hit('a', 1, 60_000, 100)).resetInMs;
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThanOrEqual(60_000);
    expect((await store.hit('short', 3, 200, 100)).hits).toBe(3);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect((await store.hit('short', 1, 200, 100)).hits).toBe(1);
  });

  it(`${name}: 50 hits of one bucket at once get the counts 1 to 50, each once`, async () => {
    const store = makeStore();
    const hits = await Promise.all(Array.from({ length: 50 }, () => store.hit('together', 1, 60_000, 1000)));
    expect(hits.map((h) => h.hits).sort((x, y) => x - y)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
  });
}

describe('memory rate-limit store', () => {
  behavesAsFixedWindows('memory store', () => createMemoryRateLimitStore());

  it('memory store: forgets the least recently hit bucket beyond its size, which only gives that bucket a fresh window', async () => {
    const store = createMemoryRateLimitStore(2);
    await store.hit('old', 5, 60_000, 100);
    await store.hit('kept', 5, 60_000, 100);
    await store.hit('kept', 1, 60_000, 100);
    await store.hit('new', 1, 60_000, 100);
    expect((await store.hit('kept', 1, 60_000, 100)).hits).toBe(7);
    expect((await store.hit('old', 1, 60_000, 100)).hits).toBe(1);
  });
});

describe.skipIf(!testDatabaseUrl)(testDatabaseUrl ? 'postgres rate-limit store' : 'postgres rate-limit store (skipped: ACS_TEST_DATABASE_URL is not set)', () => {
  let database: TestDatabase;
  let db: Db;
  beforeAll(async () => {
    database = await createTestDatabase(testDatabaseUrl!);
    db = await openDb({ databaseUrl: database.url });
  });
  afterAll(async () => {
    await db?.close();
    await database?.drop();
  });

  behavesAsFixedWindows('postgres store', () => createPostgresRateLimitStore(db));

  it('postgres store: two stores on one database (two processes) share each window', async () => {
    const [one, two] = [createPostgresRateLimitStore(db), createPostgresRateLimitStore(db)];
    const hits = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? one : two).hit('shared', 1, 60_000, 1000)));
    expect(hits.map((h) => h.hits).sort((x, y) => x - y)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    const [row] = await db.query<{ hits: string }>(`SELECT hits FROM rate_limits WHERE bucket = 'shared'`);
    expect(Number(row!.hits)).toBe(40);
  });

  it('postgres store: once the database says a bucket is spent, further hits in its window are answered without it', async () => {
    const store = createPostgresRateLimitStore(db);
    for (let i = 0; i < 3; i += 1) await store.hit('spent', 1, 60_000, 3);
    const over = await store.hit('spent', 1, 60_000, 3);
    expect(over.hits).toBe(4);
    const [row] = await db.query<{ hits: string }>(`SELECT hits FROM rate_limits WHERE bucket = 'spent'`);
    expect(Number(row!.hits)).toBe(3);
  });
});
