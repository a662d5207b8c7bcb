/**
 * `npm run bench:startup`: how long the commands a person types most take from Enter to exit,
 * start-up included — the part of every command that does not depend on its work — beside what
 * Node itself costs (`node -e 0`, the floor). Each command runs RUNS times as a fresh process
 * through the launcher a user runs (`bin/teamctl.mjs`, `bin/acs-server.mjs`, the project's Node),
 * one after another, from two installations:
 *
 * - the clone: the TypeScript sources of this checkout (`BENCH_ROOT=DIR`: another checkout);
 * - the packed install: `npm pack` (which builds `dist/`) installed with `npm install --global
 *   --prefix` into a temporary directory, as a user installs it (`--clone-only` skips it).
 *
 * Each command gets a compile cache of its own (`NODE_COMPILE_CACHE`, which the launcher's
 * `module.enableCompileCache()` uses): its first run fills it (the "first run" column, as after an
 * install or a reboot), the median is of the runs after. The table gives the median and range of
 * the wall times and the highest peak resident memory (`/proc/PID/status` VmHWM).
 *
 * `--write` replaces the part of docs/performance.md between the `bench-startup` markers.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { cpuModel, measureProcess, type MeasuredProcess } from './host.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 10);
const here = resolve(import.meta.dirname, '..');
const root = resolve(process.env.BENCH_ROOT ?? here);
const log = (line: string) => process.stderr.write(`${line}\n`);

/** A command measured: a label, the launcher (undefined: bare `node`) and its arguments. */
interface Command {
  label: string;
  bin?: 'teamctl' | 'acs-server';
  args: string[];
}

const commands = (examples: string): Command[] => [
  { label: 'node -e 0 (the floor: Node alone)', args: ['-e', '0'] },
  { label: 'teamctl --version', bin: 'teamctl', args: ['--version'] },
  { label: 'teamctl --help', bin: 'teamctl', args: ['--help'] },
  { label: 'teamctl validate -f examples/acme-research.yaml', bin: 'teamctl', args: ['validate', '-f', join(examples, 'acme-research.yaml')] },
  { label: 'acs-server --version', bin: 'acs-server', args: ['--version'] },
];

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/**
 * Runs every command RUNS times with launchers from `bins` (a directory of `teamctl.mjs`-style
 * launchers, or of installed `teamctl` shims when `installed`); returns the table rows.
 */
async function measureAll(where: string, bins: string, installed: boolean, examples: string): Promise<{ rows: string[]; failed: boolean }> {
  const rows: string[] = [];
  let failed = false;
  for (const command of commands(examples)) {
    const cache = await mkdtemp(join(os.tmpdir(), 'bench-startup-cache-'));
    // No contexts file of the user's: the same work on every machine.
    const env = { ...process.env, TEAMCTL_CONFIG: '/nonexistent', NO_COLOR: '1', NODE_COMPILE_CACHE: cache };
    const script = command.bin ? [join(bins, installed ? command.bin : `${command.bin}.mjs`)] : [];
    const runs: MeasuredProcess[] = [];
    try {
      for (let i = 0; i < RUNS; i++) runs.push(await measureProcess([...script, ...command.args], env));
    } finally {
      await rm(cache, { recursive: true, force: true });
    }
    if (runs.some((r) => r.code !== 0)) failed = true;
    const warm = runs.slice(1).map((r) => r.seconds);
    rows.push(
      `| ${where} | \`${command.label}\` | ${median(warm).toFixed(2)} | ${Math.min(...warm).toFixed(2)}–${Math.max(...warm).toFixed(2)} | ${runs[0]!.seconds.toFixed(2)} | ${Math.max(...runs.map((r) => r.rssMiB)).toFixed(0)} | ${runs.filter((r) => r.code === 0).length}/${RUNS} |`,
    );
    log(rows.at(-1)!);
  }
  return { rows, failed };
}

/** Packs the project and installs the tarball into a temporary prefix, as `scripts/pack-check.sh` does; returns the prefix. */
async function packedInstall(): Promise<string> {
  const work = await mkdtemp(join(os.tmpdir(), 'bench-startup-pack-'));
  log('bench:startup: npm pack (builds dist/) and npm install --global --prefix …');
  const tarball = execFileSync('npm', ['pack', '--pack-destination', work, '--silent'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim().split('\n').at(-1)!;
  execFileSync('npm', ['install', '--global', '--prefix', join(work, 'prefix'), '--no-audit', '--no-fund', '--loglevel=error', join(work, tarball)], { stdio: ['ignore', 'ignore', 'inherit'] });
  return work;
}

const load = () => os.loadavg().map((l) => l.toFixed(2)).join(' / ');
const loadAtStart = load();
const clone = await measureAll('clone', join(root, 'bin'), false, join(root, 'examples'));
let packed: { rows: string[]; failed: boolean } | undefined;
let work: string | undefined;
if (!process.argv.includes('--clone-only')) {
  work = await packedInstall();
  try {
    const prefix = join(work, 'prefix');
    packed = await measureAll('packed install', join(prefix, 'bin'), true, join(prefix, 'lib/node_modules/teamctl/examples'));
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

const report = [
  '## Start-up: the commands typed most',
  '',
  `Measured ${new Date().toISOString().slice(0, 10)} on ${cpuModel()}, ${os.cpus().length} cores, ${(os.totalmem() / 1024 ** 3).toFixed(1)} GiB RAM, Node ${process.version}; load average ${loadAtStart} at the start, ${load()} at the end. Each command ran ${RUNS} times as a fresh process through its launcher (\`bin/*.mjs\`; in the clone the TypeScript sources, in the packed install the JavaScript of \`dist/\`), with a compile cache of its own: the first run fills it, the median and range are of the ${RUNS - 1} runs after. Wall time from spawn to exit; peak RSS is VmHWM.`,
  '',
  '| from | command | median (s) | range (s) | first run (s) | peak RSS (MiB) | exit 0 |',
  '|---|---|---:|---:|---:|---:|---:|',
  ...clone.rows,
  ...(packed?.rows ?? []),
].join('\n');
process.stdout.write(`${report}\n`);

if (process.argv.includes('--write')) {
  const { writeMarkedSection } = await import('./host.ts');
  await writeMarkedSection(
    join(here, 'docs/performance.md'),
    '<!-- bench-startup:begin (generated by `npm run bench:startup -- --write`; edit outside the markers) -->',
    '<!-- bench-startup:end -->',
    report,
    '# Start-up (teamctl, acs-server)',
  );
}
if (clone.failed || packed?.failed) {
  process.stderr.write('bench:startup: a command did not exit 0\n');
  process.exitCode = 1;
}
