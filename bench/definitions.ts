/**
 * `npm run bench:definitions`: what a broken or hostile definition file costs `teamctl
 * validate`, against bounds. Each case is a file written to a temporary directory and validated
 * by a fresh `teamctl validate` process (the real CLI, the project's Node), whose wall time and
 * peak resident memory (`/proc/PID/status` VmHWM, read when it exits) are measured; the bounds
 * are that every case ends with exit 0 or 1 — never a crash — within {@link MAX_SECONDS} and
 * {@link MAX_RSS_MIB}, and that its first line names the file. The cases fill the default size
 * limit (1 MiB) with: a large valid definition, flow nesting, block nesting, an alias bomb, one
 * huge value, thousands of broken entries, random YAML pieces, invalid UTF-8 at the end; plus a
 * 64 MiB file, which must be refused before it is read.
 *
 * Prints a table; `--write` also replaces the part of docs/performance.md between the
 * `bench-definitions` markers. Exit 1 when a bound is missed.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { cpuModel, measureProcess } from './host.ts';

/** Wall time one validate may take, in seconds (on 2 shared cores). */
const MAX_SECONDS = 10;
/** Peak resident memory one validate may reach, in MiB (Node itself takes ~60). */
const MAX_RSS_MIB = 512;
const MIB = 1024 * 1024;
const root = resolve(import.meta.dirname, '..');
const HEAD = 'apiVersion: teamctl/v1\norganization:\n  name: bench\n';

/** Repeats `unit` until the text's UTF-8 reaches about `bytes`. */
function fill(prefix: string, unit: (i: number) => string, bytes: number, suffix = ''): string {
  const parts = [prefix];
  let size = Buffer.byteLength(prefix) + Buffer.byteLength(suffix);
  for (let i = 0; size < bytes; i++) {
    const piece = unit(i);
    const length = Buffer.byteLength(piece);
    if (size + length > bytes) break;
    parts.push(piece);
    size += length;
  }
  parts.push(suffix);
  return parts.join('');
}

/** A small deterministic generator, so every run validates the same "random" file. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) & 0x7fffffff;
    return state / 0x7fffffff;
  };
}

/** The cases: a name, what they are, and the file's content. */
function cases(): Array<{ name: string; what: string; content: () => string | Buffer }> {
  const limit = MIB - 64;
  const pieces = ['\n', '  ', '- ', ': ', '[', ']', '{', '}', ',', '"', "'", '#', '&a ', '*a', '|', '>', '? ', 'name', 'teams', 'x', 'é'];
  return [
    { name: 'example', what: 'examples/triage.yaml as it is (valid)', content: () => '' },
    {
      name: 'large valid',
      what: '1 MiB valid definition: teams of 10 agents, 2 humans, 11 edges',
      content: () =>
        fill(`${HEAD}teams:\n`, (i) => {
          const agents = Array.from({ length: 10 }, (_, a) => `      - name: agent-${a}\n        provider: echo\n        model: echo-1\n        instructions: Answer the questions about topic ${i}.\n`).join('');
          const edges = Array.from({ length: 10 }, (_, a) => `      - [lead, agent-${a}]\n`).join('');
          return `  - name: team-${i}\n    description: Team number ${i}\n    agents:\n${agents}    humans:\n      - name: lead\n      - name: deputy\n    edges:\n${edges}      - [lead, deputy]\n`;
        }, limit),
    },
    { name: 'flow nesting', what: '512 Ki nested flow sequences [[[…]]]', content: () => `${HEAD}teams: ${'['.repeat(limit / 2 - 60)}${']'.repeat(limit / 2 - 60)}\n` },
    {
      name: 'block nesting',
      what: '~1,400 nested block mappings, one more space each',
      content: () => fill(HEAD, (i) => `${' '.repeat(i)}k${i}:\n`, limit),
    },
    {
      name: 'alias bomb',
      what: 'billion laughs: 9 levels of 9 aliases each',
      content: () => {
        const lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
        const names = 'abcdefghij';
        for (let i = 1; i < 10; i++) lines.push(`${names[i]}: &${names[i]} [${Array(9).fill(`*${names[i - 1]}`).join(',')}]`);
        return `${lines.join('\n')}\n`;
      },
    },
    { name: 'huge value', what: 'one 1 MiB scalar where a provider name belongs', content: () => `${HEAD}teams:\n  - name: t\n    agents:\n      - name: a\n        provider: ${'x'.repeat(limit - 100)}\n` },
    { name: 'many problems', what: '1 MiB of teams, each with an unknown key', content: () => fill(`${HEAD}teams:\n`, (i) => `  - name: t${i}\n    colour: red\n`, limit) },
    {
      name: 'random pieces',
      what: '1 MiB of YAML syntax pieces in random order',
      content: () => {
        const next = random(20261124);
        return fill('', () => pieces[Math.floor(next() * pieces.length)]!, limit);
      },
    },
    { name: 'invalid UTF-8', what: 'a valid 1 MiB definition with one Latin-1 byte at the end', content: () => Buffer.concat([Buffer.from(fill(`${HEAD}teams:\n`, (i) => `  - name: t${i}\n`, limit - 16)), Buffer.from([0x23, 0x20, 0xe9, 0x0a])]) },
    { name: 'over the limit', what: '64 MiB file (refused before it is read)', content: () => '#'.repeat(64 * MIB) },
  ];
}

interface Measured {
  name: string;
  what: string;
  bytes: number;
  code: number | null;
  seconds: number;
  rssMiB: number;
  firstLine: string;
  ok: boolean;
}

/** Validates `file` in a fresh teamctl process; returns exit code, wall time, peak RSS and its first line of output. */
async function validate(file: string): Promise<{ code: number | null; seconds: number; rssMiB: number; firstLine: string }> {
  const run = await measureProcess([join(root, 'bin/teamctl.ts'), 'validate', '-f', file], { ...process.env, TEAMCTL_CONFIG: '/nonexistent' });
  return { ...run, firstLine: run.output.split('\n')[0] ?? '' };
}

const dir = await mkdtemp(join(os.tmpdir(), 'teamctl-bench-definitions-'));
const results: Measured[] = [];
try {
  for (const c of cases()) {
    const file = c.name === 'example' ? join(root, 'examples/triage.yaml') : join(dir, `${c.name.replace(/\W+/g, '-')}.yaml`);
    if (c.name !== 'example') await writeFile(file, c.content());
    const bytes = (await readFile(file)).length;
    const run = await validate(file);
    const named = run.firstLine.startsWith(file) || run.firstLine.includes(`${file}:`);
    const ok = (run.code === 0 || (run.code === 1 && named)) && run.seconds <= MAX_SECONDS && run.rssMiB <= MAX_RSS_MIB;
    results.push({ name: c.name, what: c.what, bytes, ...run, ok });
    process.stdout.write(`${c.name.padEnd(16)} ${(bytes / MIB).toFixed(2).padStart(6)} MiB  exit ${run.code}  ${run.seconds.toFixed(2).padStart(6)} s  ${run.rssMiB.toFixed(0).padStart(4)} MiB  ${ok ? 'ok' : 'MISSED'}  ${run.firstLine.replace(file, 'FILE').slice(0, 110)}\n`);
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}

const load = os.loadavg().map((l) => l.toFixed(2)).join(' / ');
const report = [
  '## Definitions: hostile and broken files',
  '',
  `Measured ${new Date().toISOString().slice(0, 10)} on ${cpuModel()}, ${os.cpus().length} cores, ${(os.totalmem() / 1024 ** 3).toFixed(1)} GiB RAM, Node ${process.version}; load average ${load} at the end (the machine was shared with other work). Each file is validated by a fresh \`teamctl validate\` process; time is its wall time (Node's start-up, ~0.5–1.5 s here, included), memory its peak resident set (VmHWM). Bounds: exit 0 or 1 with the file named, ≤ ${MAX_SECONDS} s, ≤ ${MAX_RSS_MIB} MiB.`,
  '',
  '| file | size | exit | time | peak RSS | first line of output | bound |',
  '|---|---|---|---|---|---|---|',
  ...results.map((r) => `| ${r.what} | ${(r.bytes / MIB).toFixed(2)} MiB | ${r.code} | ${r.seconds.toFixed(2)} s | ${r.rssMiB.toFixed(0)} MiB | ${r.firstLine.replace(/^.*?\.yaml/, 'FILE').replace(/\|/g, '\\|').slice(0, 120)} | ${r.ok ? 'met' : '**missed**'} |`),
].join('\n');
process.stdout.write(`\n${report}\n`);
if (process.argv.includes('--write')) {
  const doc = join(root, 'docs', 'performance.md');
  const BEGIN = '<!-- bench-definitions:begin (generated by `npm run bench:definitions -- --write`; edit outside the markers) -->';
  const END = '<!-- bench-definitions:end -->';
  const current = await readFile(doc, 'utf8');
  const start = current.indexOf(BEGIN);
  const end = current.indexOf(END);
  const block = `${BEGIN}\n\n${report}\n\n${END}`;
  await writeFile(doc, start >= 0 && end > start ? current.slice(0, start) + block + current.slice(end + END.length) : `${current.trimEnd()}\n\n# Definitions (teamctl validate)\n\n${block}\n`);
}
process.exitCode = results.every((r) => r.ok) ? 0 : 1;
