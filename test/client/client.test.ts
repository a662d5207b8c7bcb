import nock from 'nock';
import { inspect } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AcsApiError, AcsClient } from '../../client/index.ts';
import { startServer } from '../../service/index.ts';

let server: Awaited<ReturnType<typeof startServer>>;
let apiKey: string;
let orgId: string;

beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false });
  const org = await server.provisionOrganization('client-tests');
  apiKey = org.api_key;
  orgId = org.org_id;
});

afterAll(async () => {
  await server?.close();
});

afterEach(() => {
  nock.cleanAll();
});

async function failure(promise: Promise<unknown>): Promise<AcsApiError> {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(AcsApiError);
  return error as AcsApiError;
}

describe('client', () => {
  it('client: a wrong key maps to status 401, code invalid_api_key, with the request id and without the key', async () => {
    const wrongKey = `acs_org_${'x'.repeat(40)}`;
    const error = await failure(new AcsClient({ baseUrl: server.url, apiKey: wrongKey }).listOrganizations());
    expect(error).toMatchObject({ status: 401, code: 'invalid_api_key' });
    expect(error.requestId).toMatch(/\S+/);
    expect(`${error.message} ${inspect(error)}`).not.toContain(wrongKey);
  });

  it('client: an unknown team maps to status 404, code not_found', async () => {
    const client = new AcsClient({ baseUrl: server.url, apiKey });
    const error = await failure(client.getTeam('00000000-0000-4000-8000-000000000000'));
    expect(error).toMatchObject({ status: 404, code: 'not_found', retryable: false });
  });

  it('client: a taken team name maps to status 409, code conflict, with the existing id', async () => {
    const client = new AcsClient({ baseUrl: server.url, apiKey });
    const team = await client.createTeam(orgId, { team_name: 'twice' });
    const error = await failure(client.createTeam(orgId, { team_name: 'twice' }));
    expect(error).toMatchObject({ status: 409, code: 'conflict', existingId: team.team_id });
  });

  it('client: a 429 maps to code rate_limited, retryable, with Retry-After in seconds', async () => {
    nock('http://acs.test').get('/api/v1/organizations').reply(429, { code: 'rate_limited', detail: 'slow down', request_id: 'r-429' }, { 'retry-after': '3' });
    const error = await failure(new AcsClient({ baseUrl: 'http://acs.test', apiKey }).listOrganizations());
    expect(error).toMatchObject({ status: 429, code: 'rate_limited', requestId: 'r-429', retryAfterSeconds: 3, retryable: true });
  });

  it('client: a 500 without problem+json maps to code internal, retryable', async () => {
    nock('http://acs.test').get('/api/v1/organizations').reply(500, '<html>oops</html>', { 'x-request-id': 'r-500' });
    const error = await failure(new AcsClient({ baseUrl: 'http://acs.test', apiKey }).listOrganizations());
    expect(error).toMatchObject({ status: 500, code: 'internal', requestId: 'r-500', retryable: true });
  });

  it('client: an unreachable service maps to status 0, code network_error', async () => {
    const error = await failure(new AcsClient({ baseUrl: 'http://127.0.0.1:1', apiKey }).listOrganizations());
    expect(error).toMatchObject({ status: 0, code: 'network_error', retryable: true });
  });

  it('client: the key never shows when the client is inspected', () => {
    const client = new AcsClient({ baseUrl: server.url, apiKey });
    expect(inspect(client)).not.toContain(apiKey);
    expect(JSON.stringify(client)).not.toContain(apiKey);
  });
});
