/**
 * Two processes on one `--data-dir` (issue 21, defect 4), with the real binary: a second
 * `acs-server start` and an `acs-server admin …` command are refused naming the running server's
 * pid, and a lock left by `kill -9` is taken over by the next start, which finds every write the
 * killed server acknowledged. Several processes: a long test.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAcsServer, spawnAcsServer, type AcsProcess } from '../support/acs-process.ts';
import { request } from './helpers.ts';

describe('data dir lock across processes', () => {
  let dir: string;
  let first: AcsProcess | undefined;
  let credentials: { api_key: string; org_id: string };
  const created: string[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'acs-lock-processes-'));
    first = await spawnAcsServer(['--data-dir', dir, '--dev-credentials', join(dir, 'dev.json'), '--log-level', 'warn']);
    credentials = JSON.parse(await readFile(join(dir, 'dev.json'), 'utf8')) as typeof credentials;
  });

  afterAll(async () => {
    first?.child.kill('SIGKILL');
    await first?.exited;
    await rm(dir, { recursive: true, force: true });
  });

  it('data dir lock: a second acs-server start on the same --data-dir exits 1 naming the running server\'s pid, and the first keeps serving', async () => {
    const second = await runAcsServer(['start', '--port', '0', '--data-dir', dir]);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(`is in use by acs-server process ${first!.child.pid}`);
    for (let i = 0; i < 5; i += 1) {
      const reply = await request(`${first!.url}/api/v1/organizations/${credentials.org_id}/teams`, 'POST', { team_name: `kept-${i}` }, { 'x-api-key': credentials.api_key });
      expect(reply.status).toBe(201);
      created.push(reply.body.team_id as string);
    }
  });

  it('data dir lock: acs-server admin keys issue on the data dir of a running server is refused (data_dir_locked, with its pid) and prints no key', async () => {
    const issued = await runAcsServer(['admin', 'keys', 'issue', '--data-dir', dir, '--org', credentials.org_id]);
    expect(issued.code).toBe(1);
    expect(issued.stdout).toBe('');
    const error = JSON.parse(issued.stderr) as { code: string; owner: { pid: number } };
    expect(error.code).toBe('data_dir_locked');
    expect(error.owner.pid).toBe(first!.child.pid);
  });

  it('data dir lock: after kill -9 the next start takes the lock over at once and has every acknowledged write', async () => {
    first!.child.kill('SIGKILL');
    await first!.exited;
    first = await spawnAcsServer(['--data-dir', dir, '--log-level', 'warn']);
    const teams = await request(`${first.url}/api/v1/organizations/${credentials.org_id}/teams`, 'GET', undefined, { 'x-api-key': credentials.api_key });
    expect(teams.status).toBe(200);
    expect((teams.body.teams as Array<{ team_id: string }>).map((t) => t.team_id)).toEqual(expect.arrayContaining(created));
  });

  it('data dir lock: once the server stopped cleanly, admin commands open the data dir', async () => {
    first!.child.kill('SIGTERM');
    expect(await first!.exited).toBe(0);
    first = undefined;
    const issued = await runAcsServer(['admin', 'keys', 'issue', '--data-dir', dir, '--org', credentials.org_id]);
    expect(issued.code, issued.stderr).toBe(0);
    expect((JSON.parse(issued.stdout) as { api_key: string }).api_key).toMatch(/^acs_org_/);
  });
});
