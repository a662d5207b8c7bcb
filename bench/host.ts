/** What the benchmarks share about where they run: the CPU's name and admin queries to PostgreSQL. */
import { existsSync, readFileSync } from 'node:fs';
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
