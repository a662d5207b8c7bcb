/**
 * Writes the OpenAPI document acs-server serves to a file, for linters and fuzzers:
 *
 *   node scripts/write-openapi.ts FILE
 *
 * Starts an in-memory server on a free loopback port with an admin token (so the `/admin/v1`
 * routes exist and are described too), fetches `/api/v1/openapi.json`, writes it indented to FILE
 * and stops the server. The document is the one clients get, not a copy built another way.
 * Exit 1 with a message when the server cannot start or the document cannot be fetched.
 */
import { writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { startServer } from '../service/index.ts';

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: node scripts/write-openapi.ts FILE\n');
  process.exit(2);
}

const server = await startServer({ inMemory: true, port: 0, rateLimit: false, adminToken: randomBytes(16).toString('hex') });
try {
  const response = await fetch(`${server.url}/api/v1/openapi.json`);
  if (!response.ok) throw new Error(`GET /api/v1/openapi.json answered ${response.status}: ${await response.text()}`);
  await writeFile(file, `${JSON.stringify(await response.json(), null, 2)}\n`);
} catch (error) {
  process.stderr.write(`write-openapi: ${(error as Error).message}\n`);
  process.exitCode = 1;
} finally {
  await server.close();
}
