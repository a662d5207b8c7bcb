/**
 * Property-based: random and mutated YAML given to `teamctl validate` and `teamctl plan` (the
 * latter against a real in-memory acs-server) never crashes the CLI. A file either passes, or
 * the command exits 1 with problems located as `FILE:LINE:COL: …` or one error naming the
 * file — never `error[internal]`, a stack trace or another exit code. The runs are bounded and
 * seeded, so CI sees the same cases each time (set FUZZ_SEED to explore others).
 */
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CliIo } from '../../cli/io.ts';
import { runCli } from '../../cli/program.ts';
import { startServer } from '../../service/index.ts';

const SEED = Number(process.env.FUZZ_SEED ?? 20261124);
const examples = await Promise.all(['acme-research.yaml', 'triage.yaml', 'nightly-triage.yaml'].map((f) => readFile(new URL(`../../examples/${f}`, import.meta.url), 'utf8')));

let server: Awaited<ReturnType<typeof startServer>>;
let apiKey: string;
let dir: string;
let counter = 0;

beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false, rateLimit: false });
  apiKey = (await server.provisionOrganization('fuzz')).api_key;
  dir = await mkdtemp(join(tmpdir(), 'teamctl-fuzz-'));
});

afterAll(async () => {
  await server?.close();
});

/** Runs teamctl in-process on a file holding `text`; returns its exit code, output and the file. */
async function teamctlOn(command: 'validate' | 'plan', text: string): Promise<{ code: number; stdout: string; stderr: string; file: string }> {
  const file = join(dir, `case-${counter++}.yaml`);
  await writeFile(file, text);
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    stdout: (t) => void (stdout += `${t}\n`),
    stderr: (t) => void (stderr += `${t}\n`),
    env: { ACS_BASE_URL: server.url, ACS_API_KEY: apiKey, ECHO_PROVIDER_KEY: 'fuzz-echo-key' },
    isTTY: false,
  };
  const code = await runCli([command, '-f', file], io);
  return { code, stdout, stderr, file };
}

/** The property: success, or exit 1 with located problems or one file-level error; never a crash. */
function expectNoCrash(result: { code: number; stderr: string; file: string }): void {
  expect(result.stderr).not.toContain('error[internal]');
  expect(result.stderr).not.toMatch(/\n\s+at /);
  if (result.code === 0) return;
  expect(result.code).toBe(1);
  const lines = result.stderr.trimEnd().split('\n');
  const located = new RegExp(`^${result.file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(:\\d+:\\d+)?: `);
  // A definition error is all located lines; the only other error a file can cause here is a ${env:…} reference to an unset variable.
  const fileLevel = lines.every((l) => located.test(l)) || /^error\[unresolved_secret\]: /.test(lines[0]!);
  expect(fileLevel, result.stderr).toBe(true);
}

/** Pieces of YAML syntax and of the definition format, for random texts and insertions. */
const TOKENS = ['\n', '  ', '- ', ': ', '[', ']', '{', '}', ',', '"', "'", '#', '&a ', '*a', '---', '|', '>', '!!str ', '? ', '\t', 'name', 'teams', 'agents', 'edges', 'pipelines', 'steps', '${env:X}', '{{ inputs.x }}', '~', 'null', '0x1F', '1e9', 'é', '\u0000', '\uFEFF'];

/** A random text made of YAML pieces and characters. */
const yamlish = fc.array(fc.oneof(fc.constantFrom(...TOKENS), fc.string({ maxLength: 6 })), { maxLength: 80 }).map((parts) => parts.join(''));

/** Random data of any shape written as YAML (valid YAML, rarely a valid definition). */
const randomDocument = fc.anything({ maxDepth: 4 }).map((value) => stringify(value) ?? '');

/** One edit of a text: cut a slice, insert a piece, duplicate or re-indent a line. */
const mutation = fc.tuple(fc.nat(), fc.nat({ max: 40 }), fc.constantFrom(...TOKENS), fc.integer({ min: 0, max: 3 })).map(([at, length, piece, kind]) => (text: string): string => {
  const i = at % (text.length + 1);
  if (kind === 0) return text.slice(0, i) + text.slice(i + length);
  if (kind === 1) return text.slice(0, i) + piece + text.slice(i);
  const lines = text.split('\n');
  const n = at % lines.length;
  if (kind === 2) lines.splice(n, 0, lines[n]!);
  else lines[n] = ' '.repeat(length % 7) + lines[n]!.trimStart();
  return lines.join('\n');
});

/** One of `texts` after a few edits. */
const mutated = (texts: string[]) => fc.tuple(fc.constantFrom(...texts), fc.array(mutation, { minLength: 1, maxLength: 4 })).map(([text, edits]) => edits.reduce((t, edit) => edit(t), text));

/** An example definition after a few edits. */
const mutatedExample = mutated(examples);

/** The examples without schedules (a plan of schedules also needs a Temporal server), after a few edits. */
const mutatedResourceExample = mutated(examples.filter((text) => !text.includes('\nschedules:')));

describe('definitions: random and mutated YAML never crash the CLI', () => {
  it('validate: any text passes or exits 1 with FILE:LINE:COL problems or a file-level error', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(yamlish, randomDocument, mutatedExample), async (text) => {
        expectNoCrash(await teamctlOn('validate', text));
      }),
      { numRuns: 300, seed: SEED },
    );
  }, 120_000);

  it('plan: mutated examples against a real acs-server pass or exit 1 the same way', async () => {
    await fc.assert(
      fc.asyncProperty(mutatedResourceExample, async (text) => {
        const result = await teamctlOn('plan', text);
        expectNoCrash(result);
        if (result.code === 0) expect(result.stdout).toMatch(/Plan: |No changes/);
      }),
      { numRuns: 60, seed: SEED },
    );
  }, 120_000);
});
