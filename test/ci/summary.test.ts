/**
 * The last line of CI's log (scripts/ci-summary.ts, run by .ci/run): one plain line summing every
 * check and every test of both suites, whose status is CI's, and which never reports 0 failed
 * for a run that failed.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

/** A vitest JSON report (jest's format) with these counts; `broken` files failed before any test. */
function report(passed: number, failed: number, skipped: number, broken = 0): string {
  const files = [
    { status: failed > 0 ? 'failed' : 'passed', assertionResults: new Array(passed + failed + skipped).fill({}) },
    ...Array.from({ length: broken }, () => ({ status: 'failed', assertionResults: [] })),
  ];
  return JSON.stringify({ numPassedTests: passed, numFailedTests: failed, numPendingTests: skipped, numTodoTests: 0, testResults: files });
}

/** Runs the summary over steps `[status, name, report text or undefined]`; its output lines and exit code. */
async function summarize(steps: Array<[number, string, string | undefined]>): Promise<{ lines: string[]; code: number }> {
  const dir = await mkdtemp(join(tmpdir(), 'teamctl-ci-summary-'));
  const rows: string[] = [];
  for (const [i, [status, name, text]] of steps.entries()) {
    let path = '';
    if (text !== undefined) {
      path = join(dir, `report-${i}.json`);
      if (text !== 'missing') await writeFile(path, text);
    }
    rows.push(`${status}\t${name}\t${path}`);
  }
  await writeFile(join(dir, 'steps.tsv'), `${rows.join('\n')}\n`);
  const result = await run(process.execPath, ['scripts/ci-summary.ts', join(dir, 'steps.tsv')], { cwd: root }).then(
    (r) => ({ stdout: r.stdout, code: 0 }),
    (e: { stdout: string; code: number }) => ({ stdout: e.stdout, code: e.code }),
  );
  return { lines: result.stdout.trimEnd().split('\n'), code: result.code };
}

describe('CI summary', () => {
  it('a green run ends with the sum of checks and of both suites\' tests, skipped last, and exits 0', async () => {
    const { lines, code } = await summarize([
      [0, 'type check', undefined],
      [0, 'demo', undefined],
      [0, 'quick suite', report(900, 0, 7)],
      [0, 'long suites', report(200, 0, 0)],
    ]);
    expect(code).toBe(0);
    expect(lines.at(-1)).toBe('1102 passed, 0 failed, 7 skipped');
    expect(lines).toContain('ci: quick suite: 900 passed, 0 failed, 7 skipped');
  });

  it('with nothing skipped, the line has no skipped part', async () => {
    expect((await summarize([[0, 'quick suite', report(3, 0, 0)]])).lines.at(-1)).toBe('3 passed, 0 failed');
  });

  it('a failed check and failed tests are counted, and the status is 1', async () => {
    const { lines, code } = await summarize([
      [2, 'import cycles', undefined],
      [1, 'quick suite', report(10, 2, 0)],
    ]);
    expect(code).toBe(1);
    expect(lines.at(-1)).toBe('10 passed, 3 failed');
    expect(lines).toContain('ci: import cycles: failed (exit 2)');
  });

  it('a run that failed with no failed test (a file that did not load, an unhandled error, no report) still counts as failed', async () => {
    const { lines, code } = await summarize([
      [1, 'quick suite', report(10, 0, 0, 1)],
      [1, 'long suites', report(5, 0, 0)],
      [1, 'no report', 'missing'],
    ]);
    expect(code).toBe(1);
    expect(lines.at(-1)).toBe('15 passed, 3 failed');
  });
});
