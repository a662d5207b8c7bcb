/**
 * The last line of CI's log: `N passed, N failed` (`, N skipped` after it when some were), summing
 * everything `.ci/run` ran. Called by `.ci/run` as
 *
 *   node scripts/ci-summary.ts STEPS_FILE
 *
 * where STEPS_FILE has one line per step, `STATUS<TAB>NAME<TAB>REPORT`: the step's exit status,
 * its name, and for a vitest run the JSON report it wrote (`VITEST_JSON_REPORT`, empty for other
 * steps). A check (the type check, a lint…) counts as one passed or failed. A vitest run counts
 * its tests: passed, failed, skipped (todo included); a file that failed before any test ran, and
 * a run that exited non-zero with no failed test (an unhandled error, a missing report), count one
 * failure more each, so the line never says 0 failed of a run that failed.
 *
 * Prints one line per step above the sum, and exits 0 when nothing failed, else 1.
 */
import { readFileSync } from 'node:fs';

/** What one step adds to the sum. */
export interface Counts {
  passed: number;
  failed: number;
  skipped: number;
}

/** The parts of vitest's JSON report (jest's format) that are counted. */
interface VitestReport {
  numPassedTests: number;
  numFailedTests: number;
  numPendingTests: number;
  numTodoTests: number;
  testResults: Array<{ status: string; assertionResults: unknown[] }>;
}

/**
 * The counts of one step. Input: its exit status and, for a vitest run, the report's text
 * (undefined when the run wrote none). Output: {@link Counts}. Raises nothing: an unreadable
 * report is a failure of the step.
 */
export function countStep(status: number, reportText: string | undefined, isVitest: boolean): Counts {
  if (!isVitest) return status === 0 ? { passed: 1, failed: 0, skipped: 0 } : { passed: 0, failed: 1, skipped: 0 };
  let report: VitestReport;
  try {
    report = JSON.parse(reportText ?? '') as VitestReport;
  } catch {
    return { passed: 0, failed: 1, skipped: 0 };
  }
  // A file that failed to load (syntax error, a throwing import) has no test results.
  const brokenFiles = report.testResults.filter((r) => r.status === 'failed' && r.assertionResults.length === 0).length;
  let failed = report.numFailedTests + brokenFiles;
  if (status !== 0 && failed === 0) failed = 1;
  return { passed: report.numPassedTests, failed, skipped: report.numPendingTests + report.numTodoTests };
}

/** `N passed, N failed`, with `, N skipped` when some were. */
export function summaryLine(total: Counts): string {
  return `${total.passed} passed, ${total.failed} failed${total.skipped > 0 ? `, ${total.skipped} skipped` : ''}`;
}

function main(stepsFile: string): number {
  const total: Counts = { passed: 0, failed: 0, skipped: 0 };
  for (const line of readFileSync(stepsFile, 'utf8').split('\n').filter(Boolean)) {
    const [status = '1', name = '?', report = ''] = line.split('\t');
    let text: string | undefined;
    if (report) {
      try {
        text = readFileSync(report, 'utf8');
      } catch {
        text = undefined;
      }
    }
    const counts = countStep(Number(status), text, report !== '');
    total.passed += counts.passed;
    total.failed += counts.failed;
    total.skipped += counts.skipped;
    console.log(`ci: ${name}: ${report ? summaryLine(counts) : counts.failed ? `failed (exit ${status})` : 'passed'}`);
  }
  console.log(summaryLine(total));
  return total.failed === 0 ? 0 : 1;
}

if (import.meta.main) process.exitCode = main(process.argv[2] ?? '');
