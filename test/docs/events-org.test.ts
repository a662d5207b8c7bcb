/**
 * docs/events.md shows how to get `$ORG`, the organization id its examples use: each `ORG=$(…)`
 * line of its block, run by bash against a real acs-server, gives the organization's id.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer } from '../../service/index.ts';
import { readPage, root } from './markdown.ts';

const run = promisify(execFile);

/** Whether `command` is on PATH (the block pipes curl into jq). */
function has(command: string): boolean {
  try {
    execFileSync('bash', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** The lines of docs/events.md's first sh block that set ORG (a line ending in `\` joined to the next). */
function orgLines(): string[] {
  const text = readPage('docs/events.md').text;
  const block = /```sh\n([\s\S]*?)```/.exec(text.slice(0, text.indexOf('## The log')))?.[1] ?? '';
  return block
    .replace(/\\\n\s*/g, '')
    .split('\n')
    .filter((line) => line.startsWith('ORG=$('));
}

let server: Awaited<ReturnType<typeof startServer>>;
let org: { org_id: string; api_key: string };

beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false });
  org = await server.provisionOrganization('acme-research');
});
afterAll(async () => {
  await server?.close();
});

const tools = has('curl') && has('jq');

describe('docs/events.md: $ORG', () => {
  it('docs/events.md shows, before its examples, how to get $ORG: by curl and jq, by teamctl, from a dev credentials file', () => {
    const lines = orgLines();
    expect(lines).toHaveLength(3);
    expect(lines[0]).toContain('/api/v1/organizations');
    expect(lines[1]).toContain('teamctl get organizations');
    expect(lines[2]).toContain('dev.json');
  });

  it.skipIf(!tools)(`docs/events.md: each way of getting $ORG gives the organization's id${tools ? '' : ' (skipped: needs curl and jq)'}`, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'events-org-'));
    await writeFile(join(dir, 'dev.json'), JSON.stringify({ base_url: server.url, ...org }));
    const { ACS_BASE_URL: _url, ACS_API_KEY: _key, ...env } = process.env;
    expect(orgLines()).toHaveLength(3);
    for (const line of orgLines()) {
      // `npx teamctl` resolves in the clone; the dev credentials file is read from the current directory.
      const cwd = line.includes('dev.json') ? dir : root;
      const { stdout } = await run('bash', ['-c', `set -euo pipefail\n${line}\nprintf '%s' "$ORG"`], {
        cwd,
        env: { ...env, ACS_BASE_URL: server.url, ACS_API_KEY: org.api_key, TEAMCTL_CONFIG: '/nonexistent/teamctl.yaml', PATH: `${join(root, 'node_modules/.bin')}:${process.env.PATH}` },
      });
      expect(stdout, line).toBe(org.org_id);
    }
  }, 120_000);
});
