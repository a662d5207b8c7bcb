/**
 * What the benchmarks share about where they run: the CPU's name, admin queries to PostgreSQL,
 * measuring a process, and writing their part of docs/performance.md.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import pg from 'pg';

/** The CPU model, from /proc/cpuinfo where there is one. */
export function cpuModel(): string {
  const cpuinfo = existsSync('/proc/cpuinfo') ? readFileSync('/proc/cpuinfo', 'utf8') : '';
  return /model name\s*:\s*(.+)/.exec(cpuinfo)?.[1]?.trim() ?? os.cpus()[0]?.model ?? 'unknown';
}

/**
 * The directory of the installed PostgreSQL binaries (Debian's newest `/usr/lib/postgresql/N/bin`),
 * `''` when `initdb` and `pg_ctl` are on the PATH elsewhere, undefined when there are none.
 */
export function postgresBinDir(): string | undefined {
  const dirs = existsSync('/usr/lib/postgresql')
    ? readdirSync('/usr/lib/postgresql')
        .sort((a, b) => Number(b) - Number(a))
        .map((v) => `/usr/lib/postgresql/${v}/bin`)
    : [];
  for (const dir of dirs) if (existsSync(`${dir}/initdb`) && existsSync(`${dir}/pg_ctl`)) return dir;
  const found = spawnSync('sh', ['-c', 'command -v initdb && command -v pg_ctl'], { encoding: 'utf8' });
  return found.status === 0 ? '' : undefined;
}

/** The `pgbench` binary (`ACS_POSTGRES_BIN_DIR`, the installed PostgreSQL's, or the PATH's), if any. */
export function pgbenchPath(): string | undefined {
  const dir = process.env.ACS_POSTGRES_BIN_DIR || postgresBinDir();
  if (dir && existsSync(`${dir}/pgbench`)) return `${dir}/pgbench`;
  const found = spawnSync('sh', ['-c', 'command -v pgbench'], { encoding: 'utf8' });
  return found.status === 0 ? found.stdout.trim() : undefined;
}

/**
 * With no PostgreSQL URL given (`ACS_BENCH_DATABASE_URL`, `ACS_POSTGRES_URL`) but PostgreSQL
 * installed, runs the calling script again next to a throwaway cluster (scripts/with-postgres.sh)
 * and exits with its status; otherwise returns.
 */
export function rerunNextToPostgres(root: string): void {
  if (process.env.ACS_BENCH_DATABASE_URL || process.env.ACS_POSTGRES_URL || postgresBinDir() === undefined) return;
  const child = spawnSync('bash', [`${root}/scripts/with-postgres.sh`, '--', process.execPath, ...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit', cwd: root });
  process.exit(child.status ?? 1);
}

/** Runs one statement on its own connection to `url` (CREATE/DROP DATABASE, SHOW, scratch tables). */
export async function adminQuery(url: string, sql: string): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * Writes `report` into the markdown file `path` between the lines `begin` and `end`, replacing
 * what was between them; the rest of the file stays as it is. A file without the markers gets
 * `heading` (the introduction of a new top-level section, may be empty) and the marked block at
 * its end; a missing file starts as `# Performance`.
 */
export async function writeMarkedSection(path: string, begin: string, end: string, report: string, heading = ''): Promise<void> {
  const current = existsSync(path) ? readFileSync(path, 'utf8') : '# Performance\n';
  const from = current.indexOf(begin);
  const to = current.indexOf(end);
  const block = `${begin}\n\n${report}\n\n${end}`;
  await writeFile(
    path,
    from >= 0 && to > from ? current.slice(0, from) + block + current.slice(to + end.length) : `${current.trimEnd()}\n\n${heading ? `${heading}\n\n` : ''}${block}\n`,
  );
}

/** What {@link measureProcess} saw of a process: exit code, wall time, peak memory, output. */
export interface MeasuredProcess {
  code: number | null;
  /** From spawn to exit, in seconds. */
  seconds: number;
  /** The process's own peak resident memory (VmHWM), in MiB. */
  rssMiB: number;
  /** The first 4 KiB of each chunk of stdout and stderr, interleaved as they came. */
  output: string;
}

/**
 * Runs `node args…` (this Node) to its end with `env`, sampling `/proc/PID/status` every 10 ms
 * for VmHWM, the process's own peak: the last reading before it exits counts (Linux only; 0
 * elsewhere).
 */
export async function measureProcess(args: string[], env: NodeJS.ProcessEnv): Promise<MeasuredProcess> {
  const started = performance.now();
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => void (output += c.slice(0, 4096)));
  child.stderr.setEncoding('utf8').on('data', (c: string) => void (output += c.slice(0, 4096)));
  let peakKiB = 0;
  const sample = setInterval(() => {
    void readFile(`/proc/${child.pid}/status`, 'utf8').then(
      (status) => (peakKiB = Math.max(peakKiB, Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0))),
      () => undefined,
    );
  }, 10);
  const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
  clearInterval(sample);
  return { code, seconds: (performance.now() - started) / 1000, rssMiB: peakKiB / 1024, output };
}
