/**
 * The lock of an embedded database's data directory (service/storage/data-dir-lock.ts), in one
 * process: a second opener is refused naming the holder, a holder that no longer exists is taken
 * over at once, one on another host once its lock went stale. The real two-process cases are in
 * data-dir-lock.long.test.ts.
 */
import { mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DataDirLockedError, lockDataDir } from '../../service/storage/data-dir-lock.ts';
import { openDb } from '../../service/storage/open-db.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'acs-lock-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Leaves a lock as a holder would: the lock directory (its mtime `ageMs` old) and the owner file. */
async function leaveLock(owner: { pid: number; host: string }, ageMs: number): Promise<void> {
  await mkdir(join(dir, 'acs-server.lock'));
  const at = new Date(Date.now() - ageMs);
  await utimes(join(dir, 'acs-server.lock'), at, at);
  await writeFile(join(dir, 'acs-server.owner.json'), JSON.stringify({ ...owner, since: new Date(Date.now() - 60_000).toISOString() }));
}

/** A pid no process has: one above the kernel's largest. */
const deadPid = 4_194_304 + 17;

describe('data dir lock', () => {
  it('data dir lock: a second open of one data dir is refused naming the holder, and works again once the first is closed', async () => {
    const first = await openDb({ dataDir: dir });
    try {
      const refused = await openDb({ dataDir: dir }).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(DataDirLockedError);
      expect((refused as Error).message).toContain(`acs-server process ${process.pid}`);
      expect((refused as Error).message).toContain(dir);
    } finally {
      await first.close();
    }
    const again = await openDb({ dataDir: dir });
    expect(await again.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    await again.close();
  });

  it('data dir lock: a lock left by a process of this host that no longer exists is taken over at once, however fresh', async () => {
    await leaveLock({ pid: deadPid, host: hostname() }, 0);
    const lock = await lockDataDir(dir);
    expect(lock.compromised).toBe(false);
    await lock.release();
  });

  it('data dir lock: a fresh lock of another host is refused naming that host; once its refreshes stop for 10 s it is taken over', async () => {
    await leaveLock({ pid: 4242, host: 'elsewhere' }, 0);
    await expect(lockDataDir(dir)).rejects.toThrow(/acs-server process 4242 on host elsewhere/);
    await utimes(join(dir, 'acs-server.lock'), new Date(Date.now() - 11_000), new Date(Date.now() - 11_000));
    const lock = await lockDataDir(dir);
    await lock.release();
  });

  it('data dir lock: a lock of a live process of this host is never taken over, even when its refreshes stalled', async () => {
    // The parent of this test process lives; its lock is old, as if its event loop had stalled.
    await leaveLock({ pid: process.ppid, host: hostname() }, 60_000);
    await expect(lockDataDir(dir)).rejects.toThrow(`acs-server process ${process.ppid}`);
  });
});
