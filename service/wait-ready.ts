/**
 * `acs-server wait`: lets a script that started a server in the background (`acs-server start …
 * &`) go on only once the server serves. Ready means `/readyz` answers 200 and, given the dev
 * credentials file, the server accepts the key written in it.
 *
 * A file left over from an earlier run is never taken for the new server's (docs/cli.md, "acs-server
 * wait"). The file names the process that wrote it (`pid`, `host`, written by `acs-server start`):
 * - a file whose writer no longer runs on this machine is an earlier run's, whatever answers at
 *   its address (a server restarted on the same port and data dir accepts the same key);
 * - with `--pid PID` (`$!` after `acs-server start … &`, through npx too) only a file written by
 *   that process or one it started is taken, so the file of another server still running (an
 *   earlier run never stopped) is not; and the wait ends at once, failing, when that process has
 *   exited (a start that failed: a port in use, a bad flag) instead of running to the timeout.
 * Without a `pid` in the file (a server of an older version), its key and address decide, as they
 * always did: its key is refused, or its address does not answer, until the new server has
 * written its own (atomically, so a half-written file is never read).
 */
import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { processRuns, startedBy } from './processes.ts';

/** What {@link waitUntilReady} waits for. */
export interface WaitOptions {
  /** The `--dev-credentials` file: its `base_url` (unless `url` is given) and `api_key` are checked. */
  credentialsFile?: string | undefined;
  /** The server's base URL (`http://127.0.0.1:8080`); needed when there is no credentials file. */
  url?: string | undefined;
  /**
   * `--pid`: the process of the server start waited for (the server, or what started it: `$!` of
   * `npx acs-server start … &`). Only a credentials file it (or a process it started) wrote is
   * taken, and the wait fails at once when it has exited.
   */
  pid?: number | undefined;
  /** Give up after this many milliseconds. */
  timeoutMs: number;
  /** Pause between two checks in milliseconds (default 200). */
  intervalMs?: number;
}

/** Why the server is not ready yet, for the error at the timeout. */
type Check = { ready: true; url: string } | { ready: false; why: string };

/** The cause of a failed request, as a person reads it: `connection refused`, `timed out`. */
function reason(error: unknown): string {
  const code = (error as { cause?: { code?: string } }).cause?.code;
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ENOTFOUND') return 'no such host';
  if (error instanceof Error && error.name === 'TimeoutError') return 'no answer in time';
  return code ?? (error instanceof Error ? error.message : String(error));
}

/** The fields of a credentials file `wait` reads. */
interface CredentialsFile {
  base_url?: unknown;
  api_key?: unknown;
  pid?: unknown;
  host?: unknown;
}

/**
 * Why `parsed` is not the file of the server waited for, or undefined when it may be: its writer
 * has exited, or (with `--pid`) is not that process nor one it started.
 */
async function staleness(file: string, parsed: CredentialsFile, pid: number | undefined): Promise<string | undefined> {
  const writer = typeof parsed.pid === 'number' && (parsed.host === undefined || parsed.host === hostname()) ? parsed.pid : undefined;
  if (writer === undefined) {
    // A file without a writer (an older acs-server's): with --pid it cannot be told from an earlier run's.
    return pid === undefined ? undefined : `${file} does not name the process that wrote it (a file of an earlier run, or of an older acs-server)`;
  }
  if (!(await processRuns(writer))) return `${file} was written by an acs-server that has exited (pid ${writer}): a file of an earlier run`;
  if (pid === undefined) return undefined;
  const ours = await startedBy(writer, pid);
  if (ours === false) return `${file} is the file of another acs-server (pid ${writer}), still running, not of the one started as pid ${pid}`;
  // The process tree cannot be read here (no /proc, no ps): only the file of PID itself is known to be its.
  if (ours === undefined && writer !== pid) return `${file} names pid ${writer}, not ${pid}, and the process tree cannot be read to tell whether ${pid} started it`;
  return undefined;
}

async function checkOnce(options: WaitOptions): Promise<Check> {
  let url = options.url;
  let apiKey: string | undefined;
  if (options.credentialsFile) {
    let parsed: CredentialsFile;
    try {
      parsed = JSON.parse(await readFile(options.credentialsFile, 'utf8')) as CredentialsFile;
    } catch (error) {
      const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
      return { ready: false, why: missing ? `${options.credentialsFile} does not exist yet` : `${options.credentialsFile} is not a credentials file` };
    }
    if (typeof parsed.api_key !== 'string' || typeof parsed.base_url !== 'string') return { ready: false, why: `${options.credentialsFile} has no base_url and api_key` };
    const stale = await staleness(options.credentialsFile, parsed, options.pid);
    if (stale) return { ready: false, why: stale };
    url ??= parsed.base_url;
    apiKey = parsed.api_key;
  }
  if (!url) throw new Error('acs-server wait needs --url or --dev-credentials');
  const base = url.replace(/\/+$/, '');
  try {
    const ready = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(5_000) });
    await ready.body?.cancel();
    if (ready.status !== 200) return { ready: false, why: `${base}/readyz answers ${ready.status}` };
    if (apiKey !== undefined) {
      const orgs = await fetch(`${base}/api/v1/organizations`, { headers: { 'x-api-key': apiKey }, signal: AbortSignal.timeout(5_000) });
      await orgs.body?.cancel();
      if (orgs.status !== 200) return { ready: false, why: `the server at ${base} refuses the key in ${options.credentialsFile} (${orgs.status}; a file of an earlier run?)` };
    }
    return { ready: true, url: base };
  } catch (error) {
    return { ready: false, why: `cannot reach ${base} (${reason(error)})` };
  }
}

/**
 * Waits until the server is ready (see the module comment), checking every `intervalMs`.
 * Output: the server's base URL. Errors: throws when `timeoutMs` passes first, saying what was
 * last seen (`cannot reach URL (connection refused)`, `FILE does not exist yet`, the key refused,
 * a file of an earlier run); with `pid`, throws as soon as that process has exited (`the acs-server
 * started as pid N has exited …`, with what was last seen); throws at once when neither a file nor
 * a URL is given.
 */
export async function waitUntilReady(options: WaitOptions): Promise<{ url: string }> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    // Whether the start waited for still runs is read before the check: a server that wrote its
    // file and then exited must not be reported ready.
    const gone = options.pid !== undefined && !(await processRuns(options.pid));
    const check = await checkOnce(options);
    if (check.ready) {
      if (!gone) return { url: check.url };
      throw new Error(`the acs-server started as pid ${options.pid} has exited (its own message says why), though ${check.url} answered with its key`);
    }
    if (gone) throw new Error(`the acs-server started as pid ${options.pid} has exited (its own message says why); last seen: ${check.why}`);
    if (Date.now() >= deadline) throw new Error(`not ready after ${Math.round(options.timeoutMs / 1000)} s: ${check.why}`);
    await sleep(options.intervalMs ?? 200);
  }
}
