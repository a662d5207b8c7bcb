/**
 * `npm run bench:memory`: what the embedded database (PGlite) costs in memory, and what each way
 * of lowering it costs in speed. One command, one table (docs/performance.md between the
 * `bench-memory` markers with `--write`):
 *
 * 1. `acs-server start --in-memory` through its launcher, a fresh process each run: its peak
 *    resident memory (VmHWM) from spawn to 6 s after it listens, its resident memory then, and the
 *    time until it listens — with each option on and off: the prepared data directory instead of
 *    `initdb` in the process (`ACS_PGLITE_TEMPLATE=off` turns it off) and how V8 compiles PGlite
 *    (`--pglite-compiler mixed|baseline|optimizing`).
 * 2. `--data-dir`: a first start (the template is copied) and a restart, each compiler.
 * 3. `npm run demo` (examples/demo.ts): the peak of every process it starts, sampled every 20 ms:
 *    the server, the largest `teamctl`, the demo itself; with each compiler.
 * 4. SQL speed by compiler (bench/memory-sql.ts, a fresh process per run, compilers alternating):
 *    bulk SQL (100,000 messages in one `INSERT … SELECT`) and the service's requests (1,000
 *    creates, 1,000 page reads), by wall time and by the main thread's CPU time, which other
 *    load on a shared machine does not inflate.
 *
 * `BENCH_RUNS` (default 3) runs of each; figures are given as min–max over the runs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { cpuModel, writeMarkedSection } from './host.ts';

const root = resolve(import.meta.dirname, '..');
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const log = (line: string) => process.stderr.write(`${line}\n`);

/** VmHWM and VmRSS of `pid`, in MiB (NaN when it is gone). */
function memoryOf(pid: number): { peak: number; rss: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
    return { peak: kib('VmHWM') / 1024, rss: kib('VmRSS') / 1024 };
  } catch {
    return { peak: NaN, rss: NaN };
  }
}

/** The descendants of `pid` (children, grandchildren, …) from /proc. */
function descendants(pid: number): number[] {
  const out: number[] = [];
  const visit = (p: number) => {
    let tasks: string[] = [];
    try {
      tasks = readdirSync(`/proc/${p}/task`);
    } catch {
      return;
    }
    for (const tid of tasks) {
      let children: number[] = [];
      try {
        children = readFileSync(`/proc/${p}/task/${tid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
      } catch {
        continue;
      }
      for (const c of children) {
        out.push(c);
        visit(c);
      }
    }
  };
  visit(pid);
  return out;
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return '';
  }
}

/** Resolves when `child` exits. */
const exited = (child: ChildProcess) => new Promise<number | null>((r) => (child.exitCode !== null ? r(child.exitCode) : child.once('exit', (code) => r(code))));

/** One `acs-server start` measured: peak and resident memory 6 s after it listens, seconds until it listens. */
interface StartRun {
  peak: number;
  rss: number;
  readySeconds: number;
}

/**
 * Starts `acs-server start ARGS` through its launcher with `env`, waits until it writes its
 * credentials file (it listens) and 6 s more, reads its memory, stops it with SIGTERM.
 */
async function measureStart(args: string[], env: NodeJS.ProcessEnv): Promise<StartRun> {
  const dir = await mkdtemp(join(os.tmpdir(), 'bench-memory-'));
  const credentials = join(dir, 'dev.json');
  const started = performance.now();
  const child = spawn(process.execPath, [join(root, 'bin/acs-server.mjs'), 'start', '--port', '0', '--quiet', '--log-format', 'json', '--dev-credentials', credentials, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => void (stderr += c));
  try {
    while (!existsSync(credentials)) {
      if (child.exitCode !== null) throw new Error(`acs-server exited ${child.exitCode}: ${stderr}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const readySeconds = (performance.now() - started) / 1000;
    await new Promise((r) => setTimeout(r, 6_000));
    return { ...memoryOf(child.pid!), readySeconds };
  } finally {
    child.kill('SIGTERM');
    await exited(child);
    await rm(dir, { recursive: true, force: true });
  }
}

/** `npm run demo` measured: every process's peak, by role. */
interface DemoRun {
  code: number | null;
  seconds: number;
  server: number;
  teamctl: number;
  demo: number;
}

async function measureDemo(env: NodeJS.ProcessEnv): Promise<DemoRun> {
  const started = performance.now();
  const child = spawn(process.execPath, [join(root, 'examples/demo.ts')], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'ignore'] });
  const peaks = new Map<number, { peak: number; cmd: string }>();
  const sample = () => {
    for (const pid of [child.pid!, ...descendants(child.pid!)]) {
      const { peak } = memoryOf(pid);
      if (!Number.isFinite(peak)) continue;
      const known = peaks.get(pid);
      // Read again each time: a process seen between its fork and its exec still shows its parent's command line.
      peaks.set(pid, { peak: Math.max(peak, known?.peak ?? 0), cmd: cmdline(pid) || known?.cmd || '' });
    }
  };
  const timer = setInterval(sample, 20);
  const code = await exited(child);
  clearInterval(timer);
  const byRole = (test: (cmd: string) => boolean) => Math.max(0, ...[...peaks.values()].filter((p) => test(p.cmd)).map((p) => p.peak));
  return {
    code,
    seconds: (performance.now() - started) / 1000,
    server: byRole((c) => c.includes('bin/acs-server.mjs')),
    teamctl: byRole((c) => c.includes('bin/teamctl.mjs')),
    demo: peaks.get(child.pid!)?.peak ?? NaN,
  };
}

/** One bench/memory-sql.ts run's figures. */
interface SqlRun {
  compiler: string;
  bulk: { wallMs: number; cpuMs: number };
  creates: { wallMs: number; cpuMs: number };
  reads: { wallMs: number; cpuMs: number };
  peakMiB: number;
}

async function measureSql(compiler: string): Promise<SqlRun> {
  const child = spawn(process.execPath, [join(root, 'bench/memory-sql.ts')], { env: { ...process.env, BENCH_COMPILER: compiler }, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (c: string) => void (out += c));
  const code = await exited(child);
  if (code !== 0) throw new Error(`bench/memory-sql.ts (${compiler}) exited ${code}`);
  return JSON.parse(out.trim().split('\n').at(-1)!) as SqlRun;
}

const n = (x: number, digits = 0) => (Number.isFinite(x) ? x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : '–');
/** `min–max` of the values (one value alone when they agree at that precision). */
const range = (xs: number[], digits = 0) => {
  const lo = n(Math.min(...xs), digits);
  const hi = n(Math.max(...xs), digits);
  return lo === hi ? lo : `${lo}–${hi}`;
};
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

const load = os.loadavg();
const lines: string[] = [];

// 1. acs-server start --in-memory, four combinations.
const starts: Array<{ label: string; args: string[]; env: NodeJS.ProcessEnv }> = [
  { label: 'before: `initdb` in the process, optimising compiler', args: ['--in-memory', '--pglite-compiler', 'optimizing'], env: { ACS_PGLITE_TEMPLATE: 'off' } },
  { label: 'prepared data directory, optimising compiler', args: ['--in-memory', '--pglite-compiler', 'optimizing'], env: {} },
  { label: '`initdb` in the process, baseline compiler', args: ['--in-memory', '--pglite-compiler', 'baseline'], env: { ACS_PGLITE_TEMPLATE: 'off' } },
  { label: 'prepared data directory, baseline compiler', args: ['--in-memory', '--pglite-compiler', 'baseline'], env: {} },
  { label: '**now (the default)**: prepared data directory, mixed compiler', args: ['--in-memory'], env: {} },
];
lines.push('| `acs-server start --in-memory` | peak RSS, MiB | RSS 6 s after listening, MiB | start → listening, s |', '|---|---:|---:|---:|');
for (const s of starts) {
  const runs: StartRun[] = [];
  for (let i = 0; i < RUNS; i++) runs.push(await measureStart(s.args, s.env));
  lines.push(`| ${s.label} | ${range(runs.map((r) => r.peak))} | ${range(runs.map((r) => r.rss))} | ${range(runs.map((r) => r.readySeconds), 1)} |`);
  log(lines.at(-1)!);
}

// 2. --data-dir: first start and restart.
lines.push('', '| `acs-server start --data-dir` | peak RSS, MiB | RSS 6 s after listening, MiB | start → listening, s |', '|---|---:|---:|---:|');
for (const compiler of ['mixed', 'baseline', 'optimizing']) {
  const first: StartRun[] = [];
  const again: StartRun[] = [];
  for (let i = 0; i < RUNS; i++) {
    const dir = await mkdtemp(join(os.tmpdir(), 'bench-memory-data-'));
    try {
      first.push(await measureStart(['--data-dir', dir, '--pglite-compiler', compiler], {}));
      again.push(await measureStart(['--data-dir', dir, '--pglite-compiler', compiler], {}));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
  lines.push(`| first start, ${compiler} compiler${compiler === 'mixed' ? ' (default)' : ''} | ${range(first.map((r) => r.peak))} | ${range(first.map((r) => r.rss))} | ${range(first.map((r) => r.readySeconds), 1)} |`);
  log(lines.at(-1)!);
  lines.push(`| restart, ${compiler} compiler${compiler === 'mixed' ? ' (default)' : ''} | ${range(again.map((r) => r.peak))} | ${range(again.map((r) => r.rss))} | ${range(again.map((r) => r.readySeconds), 1)} |`);
  log(lines.at(-1)!);
}

// 3. npm run demo.
lines.push('', '| `npm run demo` | exit 0 | wall, s | peak RSS of the server, MiB | of the largest `teamctl`, MiB | of the demo script, MiB |', '|---|---:|---:|---:|---:|---:|');
for (const compiler of ['mixed', 'baseline', 'optimizing']) {
  const runs: DemoRun[] = [];
  for (let i = 0; i < RUNS; i++) runs.push(await measureDemo({ ACS_PGLITE_COMPILER: compiler }));
  lines.push(
    `| ${compiler} compiler${compiler === 'mixed' ? ' (default)' : ''} | ${runs.filter((r) => r.code === 0).length}/${runs.length} | ${range(runs.map((r) => r.seconds), 1)} | ${range(runs.map((r) => r.server))} | ${range(runs.map((r) => r.teamctl))} | ${range(runs.map((r) => r.demo))} |`,
  );
  log(lines.at(-1)!);
}

// 4. SQL speed by compiler, alternating.
const sql: Record<string, SqlRun[]> = { mixed: [], baseline: [], optimizing: [] };
for (let i = 0; i < RUNS; i++) {
  for (const compiler of ['mixed', 'baseline', 'optimizing']) {
    sql[compiler]!.push(await measureSql(compiler));
    log(`sql ${compiler}: ${JSON.stringify(sql[compiler]!.at(-1))}`);
  }
}
lines.push(
  '',
  '| SQL in an in-memory acs-server, main-thread CPU ms (wall ms) | mixed compiler (default) | baseline compiler | optimizing compiler | mixed ÷ optimizing, baseline ÷ optimizing (medians of CPU) |',
  '|---|---:|---:|---:|---:|',
);
for (const [key, label] of [
  ['bulk', 'bulk: 100,000 messages in one `INSERT … SELECT`'],
  ['creates', 'requests: 1,000 creates over HTTP, one by one'],
  ['reads', 'requests: 1,000 page reads over HTTP (limit 50)'],
] as const) {
  const cell = (runs: SqlRun[]) => `${range(runs.map((r) => r[key].cpuMs))} (${range(runs.map((r) => r[key].wallMs))})`;
  const ratio = (compiler: string) => median(sql[compiler]!.map((r) => r[key].cpuMs)) / median(sql.optimizing!.map((r) => r[key].cpuMs));
  lines.push(`| ${label} | ${cell(sql.mixed!)} | ${cell(sql.baseline!)} | ${cell(sql.optimizing!)} | ${n(ratio('mixed'), 2)}, ${n(ratio('baseline'), 2)} |`);
}
lines.push(`| peak RSS of that process, MiB | ${range(sql.mixed!.map((r) => r.peakMiB))} | ${range(sql.baseline!.map((r) => r.peakMiB))} | ${range(sql.optimizing!.map((r) => r.peakMiB))} | |`);

const report = [
  '## Embedded database: memory, and what lowering it costs',
  '',
  `Measured ${new Date().toISOString().slice(0, 10)} on ${cpuModel()}, ${os.cpus().length} cores, ${n(os.totalmem() / 2 ** 30, 1)} GiB RAM, Node ${process.version}; load average ${load.map((l) => n(l, 2)).join(' / ')} at the start, ${os.loadavg().map((l) => n(l, 2)).join(' / ')} at the end. ${RUNS} runs of each row (min–max). Peak RSS is the process's VmHWM; the machine's other work does not change it, but it does change the times.`,
  '',
  ...lines,
].join('\n');
process.stdout.write(`${report}\n`);
if (process.argv.includes('--write')) {
  await writeMarkedSection(
    join(root, 'docs/performance.md'),
    '<!-- bench-memory:begin (generated by `npm run bench:memory -- --write`; edit outside the markers) -->',
    '<!-- bench-memory:end -->',
    report,
  );
}
