/**
 * `acs-server wait`: lets a script that started a server in the background (`acs-server start …
 * &`) go on only once the server serves. Ready means `/readyz` answers 200 and, given the dev
 * credentials file, the server accepts the key written in it — so a file left over from an
 * earlier run (another server, a key of a database since discarded) is never taken for the new
 * one: its key is refused, or its address does not answer, until the new server has written its
 * own (atomically, so a half-written file is never read).
 */
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';

/** What {@link waitUntilReady} waits for. */
export interface WaitOptions {
  /** The `--dev-credentials` file: its `base_url` (unless `url` is given) and `api_key` are checked. */
  credentialsFile?: string | undefined;
  /** The server's base URL (`http://127.0.0.1:8080`); needed when there is no credentials file. */
  url?: string | undefined;
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

async function checkOnce(options: WaitOptions): Promise<Check> {
  let url = options.url;
  let apiKey: string | undefined;
  if (options.credentialsFile) {
    let parsed: { base_url?: unknown; api_key?: unknown };
    try {
      parsed = JSON.parse(await readFile(options.credentialsFile, 'utf8')) as typeof parsed;
    } catch (error) {
      const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
      return { ready: false, why: missing ? `${options.credentialsFile} does not exist yet` : `${options.credentialsFile} is not a credentials file` };
    }
    if (typeof parsed.api_key !== 'string' || typeof parsed.base_url !== 'string') return { ready: false, why: `${options.credentialsFile} has no base_url and api_key` };
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
 * last seen (`cannot reach URL (connection refused)`, `FILE does not exist yet`, the key refused);
 * throws at once when neither a file nor a URL is given.
 */
export async function waitUntilReady(options: WaitOptions): Promise<{ url: string }> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const check = await checkOnce(options);
    if (check.ready) return { url: check.url };
    if (Date.now() >= deadline) throw new Error(`not ready after ${Math.round(options.timeoutMs / 1000)} s: ${check.why}`);
    await sleep(options.intervalMs ?? 200);
  }
}
