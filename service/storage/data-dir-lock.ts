/**
 * One process per embedded database (issue 21, defect 4). PGlite has no server of its own to
 * arbitrate: two processes opening one data directory each write their own copy of it, and the
 * writes of one are lost when the other's pages land. So whoever opens the embedded database on
 * disk — `acs-server start`, `acs-server admin …`, a benchmark — first locks the directory.
 *
 * The lock is `proper-lockfile`'s: a directory `DIR/acs-server.lock` created with `mkdir` (atomic
 * on every file system, network ones included) whose mtime the holder refreshes every few
 * seconds; a lock left by a process killed with `kill -9` stops being refreshed and is taken over
 * once stale. Beside it, `DIR/acs-server.owner.json` records the holder's pid, host and start, so
 * that a refusal names the process to stop, and so that on the same host a holder that no longer
 * exists is recognised at once (its pid is gone) instead of after the staleness delay, while a
 * holder that still exists is never taken over, however long its event loop stalls.
 *
 * Why not an OS lock: Node has no `flock`/`fcntl` without a native addon, and an abstract Unix
 * socket name exists per network namespace (two containers sharing a volume would not see each
 * other); `proper-lockfile` is portable, widely used and keeps no state outside the directory.
 */
import { readFile, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import lockfile from 'proper-lockfile';

/** Who holds a data directory. */
export interface DataDirOwner {
  pid: number;
  host: string;
  /** ISO timestamp of when it took the lock. */
  since: string;
}

/** A held lock of a data directory. */
export interface DataDirLock {
  /** Whether the lock was lost (its directory removed or taken over): stop writing then. */
  readonly compromised: boolean;
  /** Releases the lock (safe to call more than once). */
  release(): Promise<void>;
}

/** The refusal to open a data directory another process holds; the message names it. */
export class DataDirLockedError extends Error {
  readonly owner: DataDirOwner | undefined;
  constructor(dir: string, owner: DataDirOwner | undefined) {
    const who = owner
      ? `acs-server process ${owner.pid}${owner.host === hostname() ? '' : ` on host ${owner.host}`} (since ${owner.since})`
      : 'another acs-server process (starting)';
    super(
      `the data directory ${dir} is in use by ${who}: one process per data directory. Stop that process first (or, for admin commands, use ` +
        `the running server's /admin/v1 routes). If no such process exists, remove ${join(dir, lockDirName)}.`,
    );
    this.name = 'DataDirLockedError';
    this.owner = owner;
  }
}

const lockDirName = 'acs-server.lock';
const ownerFileName = 'acs-server.owner.json';

/** A lock whose mtime is older than this is stale (its holder stopped refreshing it). */
const staleMs = 10_000;
/** How often the holder refreshes the lock's mtime. */
const updateMs = 2_000;

async function readOwner(dir: string): Promise<DataDirOwner | undefined> {
  try {
    const owner = JSON.parse(await readFile(join(dir, ownerFileName), 'utf8')) as Partial<DataDirOwner>;
    return typeof owner.pid === 'number' && typeof owner.host === 'string' && typeof owner.since === 'string' ? (owner as DataDirOwner) : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a process with `pid` exists on this host (EPERM: it exists, owned by someone else). */
function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Locks the data directory `dir` (which must exist) for this process.
 * - Held by a live process of this host (per the owner file): refused at once.
 * - Held by a process of this host that no longer exists: taken over at once.
 * - Otherwise `proper-lockfile` decides: a lock refreshed within 10 s is held (refused), an older
 *   one is stale and taken over.
 * `onCompromised` is called if the lock is later lost (removed by hand, taken over after a stall
 * on another host). Output: the lock. Errors: {@link DataDirLockedError}; file system errors.
 */
export async function lockDataDir(dir: string, onCompromised: (error: Error) => void = () => {}): Promise<DataDirLock> {
  const lockPath = join(dir, lockDirName);
  const owner = await readOwner(dir);
  if (owner && owner.host === hostname() && owner.pid !== process.pid) {
    if (processExists(owner.pid)) {
      // Only while the lock itself exists: a clean release removes it (the owner file may linger).
      if (await stat(lockPath).then(() => true, () => false)) throw new DataDirLockedError(dir, owner);
    } else {
      // Two processes taking over at the same moment could both get here; proper-lockfile's own
      // stale takeover has the same window. The loser's lock is then removed under it, which its
      // refresh notices within seconds (compromised: it stops writing, see open-db.ts).
      // Its holder is gone: make the lock stale now, so that proper-lockfile takes it over.
      await utimes(lockPath, 0, 0).catch(() => {});
    }
  }
  let compromised = false;
  let releaseLock: () => Promise<void>;
  try {
    releaseLock = await lockfile.lock(dir, {
      lockfilePath: lockPath,
      stale: staleMs,
      update: updateMs,
      retries: 0,
      realpath: false,
      onCompromised: (error) => {
        compromised = true;
        onCompromised(error);
      },
    });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOCKED') throw new DataDirLockedError(dir, await readOwner(dir));
    throw error;
  }
  const mine: DataDirOwner = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
  const ownerFile = join(dir, ownerFileName);
  await writeFile(`${ownerFile}.${process.pid}.tmp`, JSON.stringify(mine) + '\n');
  await rename(`${ownerFile}.${process.pid}.tmp`, ownerFile);
  let released: Promise<void> | undefined;
  return {
    get compromised() {
      return compromised;
    },
    release() {
      released ??= (async () => {
        if (compromised) return;
        // The owner file first: a process that finds no lock but a stale owner file looks no further.
        await rm(ownerFile, { force: true });
        await releaseLock().catch(() => {});
      })();
      return released;
    },
  };
}
