/**
 * Local runs seen from other processes: `teamctl runs list | show | cancel` of a run that a live
 * `teamctl run` process (the local engine) is running on this machine.
 *
 * A local run lives in its process and nowhere else: it has no server of its own to ask. While it
 * runs, the process answers on a loopback control endpoint (`127.0.0.1`, a port the system picks)
 * and says where in a small state file of the user, `$XDG_STATE_HOME/teamctl/runs/` (else
 * `~/.local/state/teamctl/runs/`; directory 0700, file 0600): the run id, the process id, the
 * endpoint's URL and a random token the endpoint requires (`Authorization: Bearer`), so only the
 * user who can read the file can read or cancel the run. `GET /run` answers the run as `runs show`
 * prints it ({@link RunDetails}); `POST /cancel` cancels it. The file goes when the run ends; one
 * left behind by a process that was killed is noticed (nothing answers, or its process is gone)
 * and removed by the next reader. So a local run is visible to the same user on the same machine,
 * while its process lives: a run of another machine or user, or one that has ended, is not.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { rmSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { ToolkitError } from '../errors/catalogue.ts';
import { isLocalRunId, RunEngines } from './run-details.ts';
import type { RunDetails, RunSummary } from './run-details.ts';

/** The directory of the state files of local runs: `$XDG_STATE_HOME/teamctl/runs`, else `~/.local/state/teamctl/runs`. */
export function localRunsDir(env: NodeJS.ProcessEnv): string {
  return join(env.XDG_STATE_HOME || join(env.HOME || homedir(), '.local', 'state'), 'teamctl', 'runs');
}

/** What a state file holds: where the run's process answers, and the token it wants. */
const LocalRunFile = z.strictObject({
  run_id: z.string().refine(isLocalRunId),
  pid: z.number().int().positive(),
  url: z.string().regex(/^http:\/\/127\.0\.0\.1:\d+$/),
  token: z.string().min(32),
  started_at: z.string(),
});
type LocalRunFile = z.infer<typeof LocalRunFile>;

/** The state file of a run (its id is safe as a file name once encoded). */
function fileOf(dir: string, runId: string): string {
  return join(dir, `${encodeURIComponent(runId)}.json`);
}

/** How long a reader waits for a run's process to answer, in ms. */
const ANSWER_TIMEOUT_MS = 5_000;

/** A published local run: {@link publishLocalRun}'s handle. */
export interface PublishedRun {
  /** Where the state file is (for messages). */
  file: string;
  /** Stops answering and removes the state file. Never rejects. */
  close(): Promise<void>;
  /** Removes the state file at once, synchronously enough for a process that is ending by a signal. */
  forget(): void;
}

/**
 * Makes a run of this process visible to `teamctl runs` of the same user (see the module's
 * comment): starts the loopback control endpoint and writes the state file. Input: the run id and
 * start, `details()` (the run as `runs show` prints it, read at each request) and `cancel()`
 * (asked by `runs cancel`; the endpoint answers 202 and calls it once). Output: the handle.
 * Errors: the file system's (a directory that cannot be made or written): the caller runs on
 * without being visible.
 */
export async function publishLocalRun(options: {
  env: NodeJS.ProcessEnv;
  runId: string;
  startedAt: Date;
  details: () => RunDetails;
  cancel: () => void;
}): Promise<PublishedRun> {
  const dir = localRunsDir(options.env);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const token = randomBytes(32).toString('base64url');
  const expected = Buffer.from(`Bearer ${token}`);
  let cancelled = false;
  const server = createServer((request, response) => {
    const given = Buffer.from(request.headers.authorization ?? '');
    const send = (status: number, body: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      response.end(JSON.stringify(body));
    };
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return send(401, { error: 'unauthenticated' });
    if (request.method === 'GET' && request.url === '/run') {
      try {
        return send(200, options.details());
      } catch {
        return send(500, { error: 'internal' });
      }
    }
    if (request.method === 'POST' && request.url === '/cancel') {
      send(202, { run_id: options.runId });
      if (!cancelled) {
        cancelled = true;
        options.cancel();
      }
      return undefined;
    }
    return send(404, { error: 'not_found' });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  // The run keeps the process alive, not its endpoint.
  server.unref();
  const { port } = server.address() as AddressInfo;
  const record: LocalRunFile = { run_id: options.runId, pid: process.pid, url: `http://127.0.0.1:${port}`, token, started_at: options.startedAt.toISOString() };
  const file = fileOf(dir, options.runId);
  const written = `${file}.${process.pid}.tmp`;
  try {
    // Written whole, then renamed: a reader never sees half a file.
    await writeFile(written, JSON.stringify(record), { mode: 0o600 });
    await rename(written, file);
  } catch (error) {
    server.close();
    await rm(written, { force: true });
    throw error;
  }
  let forgotten = false;
  const forget = () => {
    if (forgotten) return;
    forgotten = true;
    try {
      // Synchronous: it must be done before a process ended by a signal is gone.
      rmSync(file, { force: true });
    } catch {
      // Left behind: the next reader finds nothing answers there and removes it.
    }
  };
  return {
    file,
    forget,
    close: async () => {
      forget();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A state file read back, with the process it names; undefined when it is not one (left alone). */
async function readRunFile(path: string): Promise<LocalRunFile | undefined> {
  try {
    const parsed = LocalRunFile.safeParse(JSON.parse(await readFile(path, 'utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** Whether process `pid` exists (a process of another user counts: it is not ours to judge). */
function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Asks a run's process. Output: the answer's status and body; undefined when nothing answers —
 * then the file is left over from a process that ended without removing it (killed), and is
 * removed. Errors: none.
 */
async function ask(path: string, run: LocalRunFile, method: 'GET' | 'POST', route: string): Promise<{ status: number; body: unknown } | undefined> {
  if (!processExists(run.pid)) {
    await rm(path, { force: true });
    return undefined;
  }
  try {
    const response = await fetch(`${run.url}${route}`, { method, headers: { authorization: `Bearer ${run.token}` }, signal: AbortSignal.timeout(ANSWER_TIMEOUT_MS) });
    // Another token: the port is another run's now, this file's process long gone.
    if (response.status === 401) await rm(path, { force: true });
    return { status: response.status, body: await response.json().catch(() => undefined) };
  } catch (error) {
    // Refused: the process is gone or no longer answers for this run (its id reused by another).
    if (((error as { cause?: { code?: string } }).cause?.code ?? '') === 'ECONNREFUSED') await rm(path, { force: true });
    return undefined;
  }
}

/** The run's own answer to `GET /run`, when it is a run's. */
function asDetails(answer: { status: number; body: unknown } | undefined, runId: string): RunDetails | undefined {
  if (answer?.status !== 200) return undefined;
  const body = answer.body as RunDetails | undefined;
  return body && body.run_id === runId ? { ...body, engine: RunEngines.local } : undefined;
}

/**
 * The local runs of this user's live `teamctl run` processes on this machine, newest first, of
 * one organization (`organization`) or all. Output: their summaries (`engine: local`). Errors:
 * none (an unreadable directory lists nothing).
 */
export async function listLocalRuns(env: NodeJS.ProcessEnv, organization?: string): Promise<RunSummary[]> {
  const dir = localRunsDir(env);
  const names = await readdir(dir).catch(() => [] as string[]);
  const prefix = organization === undefined ? undefined : `local/${organization}/`;
  const found = await Promise.all(
    names
      .filter((name) => name.endsWith('.json'))
      .map(async (name) => {
        const path = join(dir, name);
        const run = await readRunFile(path);
        if (!run || (prefix && !run.run_id.startsWith(prefix))) return undefined;
        const details = asDetails(await ask(path, run, 'GET', '/run'), run.run_id);
        return details && { run_id: details.run_id, status: details.status, started_at: details.started_at, closed_at: details.closed_at, engine: RunEngines.local };
      }),
  );
  return found.filter((run): run is NonNullable<typeof run> => run !== undefined).sort((a, b) => (a.started_at < b.started_at ? 1 : a.started_at > b.started_at ? -1 : 0));
}

/** The `run_not_found` of a local run id that no live process of this user answers for. */
function localRunNotFound(runId: string): ToolkitError {
  return new ToolkitError(
    'run_not_found',
    `no local run ${runId} is running on this machine: a local run (teamctl run without --engine temporal) can be seen only while the teamctl run process that runs it lives, by the same user on the same machine`,
    { hint: 'teamctl runs list lists the local runs that are running; a local run that ended printed its entries and output where it ran (--engine temporal keeps runs after their start)' },
  );
}

/**
 * Reads a local run from the process running it: the run as `runs show` prints it. Errors:
 * `run_not_found` when no live process of this user on this machine runs it.
 */
export async function describeLocalRun(env: NodeJS.ProcessEnv, runId: string): Promise<RunDetails> {
  const path = fileOf(localRunsDir(env), runId);
  const run = await readRunFile(path);
  const details = run && run.run_id === runId ? asDetails(await ask(path, run, 'GET', '/run'), runId) : undefined;
  if (!details) throw localRunNotFound(runId);
  return details;
}

/**
 * Asks the process running a local run to cancel it: its waiting steps stop and nothing more is
 * sent; that process then ends the run as cancelled. Errors: `run_not_found` as
 * {@link describeLocalRun}.
 */
export async function cancelLocalRun(env: NodeJS.ProcessEnv, runId: string): Promise<void> {
  const path = fileOf(localRunsDir(env), runId);
  const run = await readRunFile(path);
  const answer = run && run.run_id === runId ? await ask(path, run, 'POST', '/cancel') : undefined;
  if (answer?.status !== 202) throw localRunNotFound(runId);
}
