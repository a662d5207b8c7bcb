/**
 * What the benchmarks share about where they run: the CPU's name, admin queries to PostgreSQL,
 * and writing their part of docs/performance.md.
 */
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import pg from 'pg';

/** The CPU model, from /proc/cpuinfo where there is one. */
export function cpuModel(): string {
  const cpuinfo = existsSync('/proc/cpuinfo') ? readFileSync('/proc/cpuinfo', 'utf8') : '';
  return /model name\s*:\s*(.+)/.exec(cpuinfo)?.[1]?.trim() ?? os.cpus()[0]?.model ?? 'unknown';
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
