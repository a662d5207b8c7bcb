/**
 * What a test run says it left out (test/support/suites-reporter.ts), read as a person reads it:
 * vitest run on a fixture (test/ci/fixtures/) split as vitest.config.ts splits the real suites,
 * with suites that skip on purpose and a passing test that prints.
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

/** Runs vitest on the fixture with `args`; its whole output, colourless. */
async function vitest(args: string[]): Promise<string> {
  const { CI: _ci, ...env } = process.env;
  const { stdout, stderr } = await run(process.execPath, [resolve(root, 'node_modules/vitest/vitest.mjs'), 'run', '--config', 'test/ci/fixtures/vitest.config.ts', '--no-color', ...args], {
    cwd: root,
    env: { ...env, NO_COLOR: '1' },
  });
  return stdout + stderr;
}

describe('test runs: what was left out', () => {
  it('the quick suite names each skipped suite once, with its reason and the command that runs its file, then the long suites with theirs', async () => {
    const output = await vitest(['--project', 'quick']);
    const lines = output.split('\n');
    expect(lines).toContain(
      'skipped: skips.fixture.ts › tracing on temporal: needs a Temporal server, and TEMPORAL_ADDRESS is not set: bash scripts/with-temporal.sh --install -- npx vitest run skips.fixture.ts',
    );
    // A skipped test of a suite that otherwise ran; a reason that needs no server gets no command.
    expect(lines).toContain('skipped: skips.fixture.ts › mixed › on an old Node: needs a Node older than 22');
    expect(lines.filter((l) => l.startsWith('skipped:'))).toHaveLength(2);
    expect(lines.at(-1) === '' ? lines.at(-2) : lines.at(-1)).toBe(
      'not run: the long suites (1 file listed in vitest.config.ts and every *.long.test.ts: real Temporal server, PostgreSQL, several processes, browser): LONG-COMMAND',
    );
  });

  it('a passing test\'s own output stays out of the report', async () => {
    const output = await vitest(['--project', 'quick']);
    expect(output).toContain('Tests  2 passed | 3 skipped');
    expect(output).not.toContain('noise of a passing test');
  });

  it('a run of every suite does not speak of long suites left out', async () => {
    const output = await vitest([]);
    expect(output).not.toContain('not run:');
    expect(output).toContain('Tests  3 passed | 3 skipped');
  });
});
