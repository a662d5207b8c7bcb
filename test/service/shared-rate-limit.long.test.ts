/**
 * Rate limits enforced once across processes (issue 21, defect 9): two acs-server processes (the
 * real binary) on one PostgreSQL database with `--rate-limit 20` let 20 requests of a key through
 * in a window, not 20 each. PostgreSQL only; several processes: a long test.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnAcsServer, type AcsProcess } from '../support/acs-process.ts';
import { createTestDatabase, testDatabaseUrl, type TestDatabase } from '../support/postgres.ts';
import { request } from './helpers.ts';

const title = testDatabaseUrl ? 'shared rate limit' : 'shared rate limit (skipped: ACS_TEST_DATABASE_URL is not set; these tests need a PostgreSQL server)';

describe.skipIf(!testDatabaseUrl)(title, () => {
  let database: TestDatabase;
  let dir: string;
  let processes: AcsProcess[] = [];
  let apiKey: string;

  beforeAll(async () => {
    database = await createTestDatabase(testDatabaseUrl!);
    dir = await mkdtemp(join(tmpdir(), 'acs-shared-limit-'));
    const file = join(dir, 'dev.json');
    const common = ['--database-url', database.url, '--data-dir', dir, '--rate-limit', '20', '--log-level', 'warn'];
    // One after the other: the first provisions the dev organization, the second finds it.
    processes.push(await spawnAcsServer([...common, '--dev-credentials', file]));
    processes.push(await spawnAcsServer(common));
    apiKey = (JSON.parse(await readFile(file, 'utf8')) as { api_key: string }).api_key;
  });

  afterAll(async () => {
    for (const p of processes) p.child.kill('SIGKILL');
    await Promise.all(processes.map((p) => p.exited));
    processes = [];
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('shared rate limit: two processes on one database with --rate-limit 20 let 20 requests of a key through in the window, not 40', async () => {
    const statuses: number[] = [];
    const remaining: string[] = [];
    // Alternating, and some at once, as a client behind a load balancer sends them.
    for (let round = 0; round < 10; round += 1) {
      const replies = await Promise.all(processes.flatMap((p) => [0, 1].map(() => request(`${p.url}/api/v1/organizations`, 'GET', undefined, { 'x-api-key': apiKey }))));
      for (const reply of replies) {
        statuses.push(reply.status);
        remaining.push(reply.headers.get('ratelimit-remaining') ?? '');
      }
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(20);
    expect(statuses.filter((s) => s === 429)).toHaveLength(20);
    // Both processes count against one window: each remaining count from 19 down to 0 was handed out once.
    expect(remaining.filter((_, i) => statuses[i] === 200).map(Number).sort((a, b) => b - a)).toEqual(Array.from({ length: 20 }, (_, i) => 19 - i));
  });

  it('shared rate limit: requests without a valid key are limited by address across both processes too', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 30; i += 1) statuses.push((await request(`${processes[i % 2]!.url}/api/v1/organizations`, 'GET')).status);
    expect(statuses.filter((s) => s === 401)).toHaveLength(20);
    expect(statuses.filter((s) => s === 429)).toHaveLength(10);
  });
});
