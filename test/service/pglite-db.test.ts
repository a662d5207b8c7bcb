import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isUniqueViolation, type Db } from '../../service/storage/db.ts';
import { openPgliteDb } from '../../service/storage/pglite-db.ts';

// The embedded database's statement path (service/storage/pglite-db.ts): one message per
// statement, answers read with node-postgres's protocol reader, and its own rule for when a
// statement may run beside a transaction.
describe('pglite storage', () => {
  let db: Db;

  beforeAll(async () => {
    db = await openPgliteDb();
    await db.query(`CREATE TABLE notes (id int PRIMARY KEY, body text, at timestamptz DEFAULT now(), meta jsonb, big bigint)`);
  });

  afterAll(async () => {
    await db.close();
  });

  it('pglite storage: rows come back typed as PGlite types them (int, text, timestamptz as Date, jsonb as object, bigint), null kept', async () => {
    await db.query(`INSERT INTO notes (id, body, meta, big) VALUES ($1, $2, $3, $4), (2, NULL, NULL, NULL)`, [1, 'héllo', { a: [1, 'x'] }, '9007199254740993']);
    const rows = await db.query<{ id: number; body: string | null; at: Date; meta: unknown; big: unknown }>(`SELECT * FROM notes ORDER BY id`);
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatchObject({ id: 1, body: 'héllo', meta: { a: [1, 'x'] } });
    expect(rows[0]!.at).toBeInstanceOf(Date);
    expect(String(rows[0]!.big)).toBe('9007199254740993');
    expect(rows[1]).toMatchObject({ id: 2, body: null, meta: null, big: null });
    await db.query(`DELETE FROM notes`);
  });

  it('pglite storage: a long result arriving in several pieces is read whole', async () => {
    const rows = await db.query<{ n: number; pad: string }>(`SELECT g AS n, repeat('x', 500) AS pad FROM generate_series(1, 2000) AS g`);
    expect(rows).toHaveLength(2000);
    expect(rows.at(-1)).toEqual({ n: 2000, pad: 'x'.repeat(500) });
  });

  it('pglite storage: a failing statement rejects with its SQLSTATE and constraint, and the next statement runs normally', async () => {
    await db.query(`INSERT INTO notes (id, body) VALUES (10, 'first')`);
    const failure = await db.query(`INSERT INTO notes (id, body) VALUES (10, 'again')`).catch((error: unknown) => error);
    expect(isUniqueViolation(failure)).toBe(true);
    expect(failure).toMatchObject({ code: '23505', constraint: 'notes_pkey' });
    expect(await db.query(`SELECT body FROM notes WHERE id = 10`)).toEqual([{ body: 'first' }]);
    const syntax = await db.query(`SELEC 1`).catch((error: unknown) => error);
    expect(syntax).toMatchObject({ code: '42601' });
    await db.query(`DELETE FROM notes`);
  });

  it('pglite storage: a query sent while a transaction is open runs after it ends, never inside it', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let inserted!: () => void;
    const insertedOnce = new Promise<void>((resolve) => (inserted = resolve));
    const rolledBack = db
      .transaction(async (tx) => {
        await tx.query(`INSERT INTO notes (id, body) VALUES (20, 'uncommitted')`);
        inserted();
        await gate;
        throw new Error('roll back');
      })
      .catch((error: Error) => error.message);
    await insertedOnce;
    // Inside the transaction this would see the uncommitted row; in its turn it sees none.
    const seen = db.query<{ n: number }>(`SELECT count(*)::int AS n FROM notes WHERE id = 20`);
    release();
    expect(await rolledBack).toBe('roll back');
    expect(await seen).toEqual([{ n: 0 }]);
  });

  it('pglite storage: transactions and the queries queued behind them run in the order they came', async () => {
    const order: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const first = db.transaction(async (tx) => {
      await gate;
      await tx.query(`INSERT INTO notes (id, body) VALUES (30, 'a')`);
      order.push('transaction 1');
    });
    const query = db.query(`SELECT 1`).then(() => order.push('query'));
    const second = db.transaction(async (tx) => {
      await tx.query(`INSERT INTO notes (id, body) VALUES (31, 'b')`);
      order.push('transaction 2');
    });
    release();
    await Promise.all([first, query, second]);
    expect(order).toEqual(['transaction 1', 'query', 'transaction 2']);
    expect(await db.query(`SELECT id FROM notes WHERE id IN (30, 31) ORDER BY id`)).toEqual([{ id: 30 }, { id: 31 }]);
  });
});
