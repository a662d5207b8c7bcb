import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * The PostgreSQL server the tests may use: `ACS_TEST_DATABASE_URL` (any database on it; each
 * test creates and drops its own), or undefined when tests run on PGlite only.
 */
export const testDatabaseUrl: string | undefined = process.env.ACS_TEST_DATABASE_URL || undefined;

/** Whether this test run routes `startHarness` to PostgreSQL (the vitest `postgres` project). */
export const postgresBackend: boolean = process.env.ACS_TEST_BACKEND === 'postgres';

/** A database created for one test; `drop()` removes it (safe to call more than once). */
export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

async function admin<T>(adminUrl: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * Creates an empty database `acs_test_<random>` on the server of `adminUrl` and returns its URL.
 * Errors: rejects when the server is unreachable or the role may not create databases.
 */
export async function createTestDatabase(adminUrl: string): Promise<TestDatabase> {
  const name = `acs_test_${randomBytes(6).toString('hex')}`;
  await admin(adminUrl, (client) => client.query(`CREATE DATABASE ${name}`));
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  let dropping: Promise<void> | undefined;
  return {
    url: url.toString(),
    name,
    drop() {
      // FORCE: a server that failed to close cleanly must not keep the database alive.
      dropping ??= admin(adminUrl, async (client) => {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      });
      return dropping;
    },
  };
}
