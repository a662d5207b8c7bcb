import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startServer } from '../../service/index.ts';
import { request } from './helpers.ts';

const temp: string[] = [];
afterAll(async () => {
  for (const dir of temp) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'acs-bin-'));
  temp.push(dir);
  return dir;
}

describe('acs-server', () => {
  it('acs-server: start --port 0 --in-memory --dev-credentials writes working credentials and stops on SIGTERM', async () => {
    const dir = await tempDir();
    const file = join(dir, 'dev.json');
    const child = spawn('node_modules/.bin/node', ['bin/acs-server.ts', 'start', '--port', '0', '--in-memory', '--dev-credentials', file], {
      cwd: join(import.meta.dirname, '../..'),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          const match = /acs-server listening on (http:\/\/\S+)/.exec(out);
          if (match) resolve(match[1]!);
        });
        child.on('exit', (code) => reject(new Error(`exited with ${code} before listening: ${out}`)));
      });
      const credentials = JSON.parse(await readFile(file, 'utf8'));
      expect(credentials.base_url).toBe(url);
      expect(credentials.api_key).toMatch(/^acs_org_[0-9A-Za-z]{40}$/);
      const orgs = await request(`${url}/api/v1/organizations`, 'GET', undefined, { 'x-api-key': credentials.api_key });
      expect(orgs.body.organizations).toEqual([expect.objectContaining({ org_id: credentials.org_id, org_name: 'dev' })]);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });

  it('acs-server: dev credentials re-use the organization and the key across starts on one data dir', async () => {
    const dataDir = await tempDir();
    const file = join(dataDir, 'dev.json');
    const first = await startServer({ dataDir, port: 0, devCredentialsFile: file });
    await first.close();
    const second = await startServer({ dataDir, port: 0, devCredentialsFile: file });
    await second.close();
    expect(second.devCredentials?.org_id).toBe(first.devCredentials?.org_id);
    expect(second.devCredentials?.api_key).toBe(first.devCredentials?.api_key);

    // A lost file gets a new key for the same organization; the key works.
    await rm(file);
    const third = await startServer({ dataDir, port: 0, devCredentialsFile: file });
    try {
      expect(third.devCredentials?.org_id).toBe(first.devCredentials?.org_id);
      expect(third.devCredentials?.api_key).not.toBe(first.devCredentials?.api_key);
      const orgs = await request(`${third.url}/api/v1/organizations`, 'GET', undefined, { 'x-api-key': third.devCredentials!.api_key });
      expect(orgs.body.organizations).toHaveLength(1);
      expect(orgs.body.organizations[0].org_id).toBe(first.devCredentials?.org_id);
    } finally {
      await third.close();
    }
  });

  it('acs-server: close answers a held long poll with an empty page', async () => {
    const server = await startServer({ inMemory: true, port: 0 });
    const { org_id, api_key } = await server.provisionOrganization('o');
    const call = (method: string, path: string, body?: unknown) => request(server.url + path, method, body, { 'x-api-key': api_key });
    const team = await call('POST', `/api/v1/organizations/${org_id}/teams`, { team_name: 't' });
    const a = await call('POST', `/api/v1/teams/${team.body.team_id}/humans`, { name: 'a' });
    const b = await call('POST', `/api/v1/teams/${team.body.team_id}/humans`, { name: 'b' });
    const edge = await call('POST', `/api/v1/teams/${team.body.team_id}/edges`, { participants: [a.body.human_id, b.body.human_id] });
    const thread = await call('POST', `/api/v1/edges/${edge.body.edge_id}/threads`, { sender_agent_id: a.body.human_id, content: 'x' });
    const after = (await call('GET', `/api/v1/threads/${thread.body.thread_id}`)).body.next_after;
    const held = call('GET', `/api/v1/threads/${thread.body.thread_id}?after=${after}&wait=30`);
    await call('GET', '/healthz');
    await server.close();
    const res = await held;
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ messages: [], next_after: after, has_more: false });
  });
});
