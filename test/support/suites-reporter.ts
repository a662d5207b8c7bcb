/**
 * A vitest reporter that says, after the summary, what this run did not run and how to run it:
 * one line per skipped suite (a `describe` whose tests were all skipped, or a lone skipped test)
 * with the reason and the command that runs it, one line for the long suites when only the quick
 * one ran (`npm test`), and one for the `postgres` project when no PostgreSQL was given. Nothing
 * is printed when nothing was left out. Configured in vitest.config.ts.
 *
 * The reason of a skipped suite is the `(skipped: …)` its title carries (as `describeTemporal` and
 * the PostgreSQL-only suites write it); a service suite skipped on PGlite without one runs on
 * PostgreSQL only (the `postgres` project). The command runs its file next to the server the reason
 * names (scripts/with-temporal.sh, scripts/with-postgres.sh).
 */
import type { Reporter, TestCase, TestModule, TestSuite, Vitest } from 'vitest/node';

/** Options given in vitest.config.ts. */
export interface SuitesReporterOptions {
  /** The command that runs the long suites (and the `postgres` project) as CI does. */
  longCommand: string;
  /** How many long files the config lists by name (besides `*.long.test.ts`). */
  longFileCount: number;
}

/** `(skipped: …)` at the end of a title, as the suites' titles carry their reason. */
const SKIP_NOTE = /\s*\(skipped: (.+)\)\s*$/;

export default class SuitesReporter implements Reporter {
  readonly #options: SuitesReporterOptions;
  #vitest: Vitest | undefined;

  constructor(options: SuitesReporterOptions) {
    this.#options = options;
  }

  onInit(vitest: Vitest): void {
    this.#vitest = vitest;
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const vitest = this.#vitest;
    if (!vitest) return;
    const lines: string[] = [];
    const ran = new Set(vitest.projects.map((p) => p.name));
    // Tests left out by -t are not skipped for a reason worth a line.
    if (!vitest.config.testNamePattern) {
      for (const module of testModules) for (const skipped of skippedParts(module)) lines.push(this.#line(module, skipped, ran));
    }
    const filter = vitest.config.project ?? [];
    const asked = (name: string) => filter.length === 0 || filter.includes(name);
    if (ran.has('quick') && !ran.has('long')) {
      lines.push(
        `not run: the long suites (${this.#options.longFileCount} file${this.#options.longFileCount === 1 ? '' : 's'} listed in vitest.config.ts and every *.long.test.ts: real Temporal server, PostgreSQL, several processes, browser): ${this.#options.longCommand}`,
      );
    } else if (asked('postgres') && !ran.has('postgres') && testModules.some((m) => m.relativeModuleId.startsWith('test/service/'))) {
      lines.push('not run: project postgres (the service suites once more on PostgreSQL; ACS_TEST_DATABASE_URL is not set): bash scripts/with-postgres.sh --install -- npx vitest run --project postgres');
    }
    if (lines.length > 0) vitest.logger.log(lines.join('\n'));
  }

  /** The line of one skipped suite or test: where, why, and the command that runs that file with what it needs. */
  #line(module: TestModule, part: TestSuite | TestCase, ran: ReadonlySet<string>): string {
    const file = module.relativeModuleId;
    const note = SKIP_NOTE.exec(part.name)?.[1];
    const where = `${file} › ${[...suiteNames(part), part.name.replace(SKIP_NOTE, '')].join(' › ')}`;
    const service = module.project.name !== 'postgres' && file.startsWith('test/service/');
    // A service suite skipped on PGlite that the postgres project of this very run ran.
    if (service && ran.has('postgres')) return `skipped on PGlite: ${where}: PostgreSQL only, it ran in the postgres project`;
    const reason = note ?? (service ? 'PostgreSQL only' : 'by a condition in the file');
    const wrapper = /temporal/i.test(reason) ? 'with-temporal.sh' : /postgres/i.test(reason) || service ? 'with-postgres.sh' : undefined;
    return `skipped: ${where}: ${reason}${wrapper ? `: bash scripts/${wrapper} --install -- npx vitest run ${file}` : ''}`;
  }
}

/**
 * The skipped parts of a module, largest first: a suite whose tests were all skipped (not its
 * inner suites again), else each skipped test.
 */
function* skippedParts(parent: TestModule | TestSuite): Generator<TestSuite | TestCase> {
  for (const child of parent.children) {
    if (child.type === 'suite') {
      const tests = [...child.children.allTests()];
      if (tests.length > 0 && tests.every((t) => t.result().state === 'skipped' && t.options.mode !== 'todo')) yield child;
      else yield* skippedParts(child);
    } else if (child.result().state === 'skipped' && child.options.mode !== 'todo') {
      yield child;
    }
  }
}

/** The names of the suites around a suite or test, outermost first. */
function suiteNames(part: TestSuite | TestCase): string[] {
  const names: string[] = [];
  for (let parent = part.parent; parent.type === 'suite'; parent = parent.parent) names.unshift(parent.name);
  return names;
}
