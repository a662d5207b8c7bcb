/**
 * Scraping a metrics listener and reading what it said through a kept parser: Python's
 * `prometheus_client` (scripts/prometheus-parse.sh installs it, pinned, into .tools/ and reuses
 * it), so that the tests check the exposition as Prometheus's own library reads it, not as our
 * code would.
 */
import { execFile, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const script = resolve(import.meta.dirname, '..', '..', 'scripts', 'prometheus-parse.sh');

/** Whether python3 is on PATH (the parser is installed with it). */
async function hasPython(): Promise<boolean> {
  try {
    await promisify(execFile)('python3', ['--version']);
    return true;
  } catch {
    return false;
  }
}

const pythonPresent = await hasPython();

/**
 * `describe` for a suite that reads expositions with the parser. Without python3 it is skipped
 * with a title that says why, except in CI (`CI` set), where it must run, so it fails instead.
 */
export function describeWithParser(title: string, body: () => void): void {
  if (pythonPresent) describe(title, body);
  else if (process.env.CI) {
    describe(title, () => {
      it(`${title}: needs python3 to install Prometheus's parser, and CI must provide it`, () => {
        throw new Error('python3 is not on PATH: scripts/prometheus-parse.sh installs prometheus_client with it');
      });
    });
  } else describe.skip(`${title} (skipped: needs python3 for Prometheus's parser, prometheus_client, and it is not on PATH)`, body);
}

/** Installs the parser now (once; later calls reuse it): call in a `beforeAll` with room for a pip install. */
export async function installParser(): Promise<void> {
  await promisify(execFile)('bash', [script, '--install'], { timeout: 300_000 });
}

/** One sample as the parser read it. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number | string;
}

/** One metric family as the parser read it. */
export interface Family {
  name: string;
  type: string;
  samples: Sample[];
}

/** What a scrape returned, parsed. */
export interface Scrape {
  contentType: string;
  text: string;
  families: Family[];
  /** The family named `name` (as the parser names it: a counter without `_total`). */
  family(name: string): Family | undefined;
  /**
   * The sum of the values of the samples named `sample` whose labels include `labels`; 0 when
   * there is none (a counter not incremented yet has no sample for those labels).
   */
  value(sample: string, labels?: Record<string, string>): number;
  /** Whether any sample is named `sample`. */
  has(sample: string): boolean;
}

/** Parses `text` as `format` with prometheus_client. Errors: rejects with the parser's message when it does not parse. */
export function parseExposition(text: string, format: 'text' | 'openmetrics'): Promise<Family[]> {
  return new Promise((done, fail) => {
    const child = spawn('bash', [script, format], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('error', fail);
    child.on('close', (code) => {
      if (code === 0) done(JSON.parse(out) as Family[]);
      else fail(new Error(`prometheus_client refused the ${format} exposition (exit ${code}): ${err.trim()}`));
    });
    child.stdin.end(text);
  });
}

/**
 * Scrapes `url` (with an `Accept` that prefers OpenMetrics when `openMetrics`, as Prometheus
 * sends) and parses the answer in the format its `Content-Type` names. Errors: a status other
 * than 200, a content type of neither format, an exposition that does not parse.
 */
export async function scrape(url: string, { openMetrics = false } = {}): Promise<Scrape> {
  const accept = openMetrics
    ? 'application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.1'
    : 'text/plain;version=0.0.4;q=1,*/*;q=0.1';
  const response = await fetch(url, { headers: { accept } });
  const text = await response.text();
  expect(response.status, text.slice(0, 500)).toBe(200);
  const contentType = response.headers.get('content-type') ?? '';
  const format = contentType.startsWith('application/openmetrics-text') ? 'openmetrics' : contentType.startsWith('text/plain') ? 'text' : undefined;
  if (!format) throw new Error(`${url} answered with content type ${contentType}`);
  const families = await parseExposition(text, format);
  return scrapeOf(contentType, text, families);
}

function scrapeOf(contentType: string, text: string, families: Family[]): Scrape {
  const matching = (sample: string, labels: Record<string, string>) =>
    families.flatMap((f) => f.samples).filter((s) => s.name === sample && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return {
    contentType,
    text,
    families,
    family: (name) => families.find((f) => f.name === name),
    value: (sample, labels = {}) => matching(sample, labels).reduce((sum, s) => sum + Number(s.value), 0),
    has: (sample) => families.some((f) => f.samples.some((s) => s.name === sample)),
  };
}

/** Scrapes `url` until `done` holds for what it read; gives up after `timeoutMs` (default 20 s), saying what it read last. */
export async function scrapeUntil(url: string, done: (scraped: Scrape) => boolean, what: string, timeoutMs = 20_000): Promise<Scrape> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const scraped = await scrape(url);
    if (done(scraped)) return scraped;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; the last scrape:\n${scraped.text.split('\n').filter((l) => !l.startsWith('#')).join('\n').slice(0, 4000)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
