/** `teamctl keys rotate` against a real acs-server. */
import { mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcsClient } from '../../client/acs-client.ts';
import { graceSeconds } from '../../cli/commands/keys.ts';
import { startServer } from '../../service/index.ts';
import { runTeamctl } from '../support/cli.ts';
import type { CliRun } from '../support/cli.ts';

let server: Awaited<ReturnType<typeof startServer>>;

const teamctl = (args: string[], apiKey: string): Promise<CliRun> => runTeamctl(args, { ACS_BASE_URL: server.url, ACS_API_KEY: apiKey });

const works = async (apiKey: string) => new AcsClient({ baseUrl: server.url, apiKey }).listOrganizations().then(() => true, () => false);

beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false });
});

afterAll(async () => {
  await server?.close();
});

describe('teamctl keys rotate', () => {
  it('keys rotate: prints the new key once on stdout; it works, and the old key keeps working through the default 24h grace', async () => {
    const { api_key: oldKey } = await server.provisionOrganization('rotate-default');
    const result = await teamctl(['keys', 'rotate'], oldKey);
    expect(result.code, result.stderr).toBe(0);
    const newKey = result.stdout.trim();
    expect(newKey).toMatch(/^acs_org_[A-Za-z0-9]{32,}$/);
    expect(newKey).not.toBe(oldKey);
    expect(result.stderr).toContain('Rotated key');
    expect(result.stderr).not.toContain(newKey);
    expect(await works(newKey)).toBe(true);
    expect(await works(oldKey)).toBe(true);
  });

  it('keys rotate --grace 0 --out FILE: the new key goes only to a 0600 file, and the old key is refused at once', async () => {
    const { api_key: oldKey } = await server.provisionOrganization('rotate-now');
    const file = join(await mkdtemp(join(tmpdir(), 'teamctl-keys-')), 'key');
    const result = await teamctl(['keys', 'rotate', '--grace', '0', '--out', file], oldKey);
    expect(result.code, result.stderr).toBe(0);
    const newKey = (await readFile(file, 'utf8')).trim();
    expect(result.stdout + result.stderr).not.toContain(newKey);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await works(newKey)).toBe(true);
    expect(await works(oldKey)).toBe(false);
  });

  it('keys rotate --out: an existing file is refused before anything is rotated', async () => {
    const { api_key: key } = await server.provisionOrganization('rotate-taken');
    const file = join(await mkdtemp(join(tmpdir(), 'teamctl-keys-')), 'taken');
    await writeFile(file, 'keep me');
    const result = await teamctl(['keys', 'rotate', '--grace', '0', '--out', file], key);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('the file exists');
    expect(await readFile(file, 'utf8')).toBe('keep me');
    expect(await works(key)).toBe(true);
  });

  it('keys rotate --grace: takes seconds or durations from 0 to 30 days and refuses anything else', () => {
    expect([graceSeconds('0'), graceSeconds('3600'), graceSeconds('90s'), graceSeconds('30m'), graceSeconds('24h'), graceSeconds('7d')]).toEqual([0, 3600, 90, 1800, 86_400, 604_800]);
    for (const bad of ['-1', 'soon', '31d', '1.5']) expect(() => graceSeconds(bad), bad).toThrow(/grace period/);
  });
});
