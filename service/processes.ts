/**
 * What `acs-server wait` and `acs-server start` learn of other processes on this machine: whether
 * a process still runs, and whether one process was started by another (directly or through a
 * chain: `npx` → npm → node). Read from `/proc` on Linux, else from `ps` (macOS, the BSDs).
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** `/proc/PID/stat` split after its `(comm)`, which may hold spaces and parentheses: `[state, ppid, …]`; undefined when unreadable. */
async function procStat(pid: number): Promise<string[] | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** Whether this machine has `/proc` (Linux). */
async function hasProc(): Promise<boolean> {
  return (await procStat(process.pid)) !== undefined;
}

/**
 * Whether process `pid` runs on this machine. A process that has exited but was not reaped yet
 * by its parent (a zombie, on Linux) counts as exited. Input: a pid (a positive integer).
 */
export async function processRuns(pid: number): Promise<boolean> {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: it runs, as another user.
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const stat = await procStat(pid);
  return stat?.[0] !== 'Z' && stat?.[0] !== 'X';
}

/** The parent of `pid`, or undefined when it cannot be read (gone, or neither `/proc` nor `ps`). */
async function parentOf(pid: number, proc: boolean): Promise<number | undefined> {
  if (proc) {
    const ppid = Number((await procStat(pid))?.[1]);
    return Number.isInteger(ppid) ? ppid : undefined;
  }
  try {
    const { stdout } = await run('ps', ['-o', 'ppid=', '-p', String(pid)]);
    const ppid = Number(stdout.trim());
    return stdout.trim() !== '' && Number.isInteger(ppid) ? ppid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether process `pid` is `ancestor` itself or was started by it, directly or through other
 * processes (`npx acs-server start … &`: `$!` is npm's pid, the server its child). Output: true,
 * false, or undefined when the process tree cannot be read (no `/proc` and no `ps`: only `pid ===
 * ancestor` is known then).
 */
export async function startedBy(pid: number, ancestor: number): Promise<boolean | undefined> {
  if (pid === ancestor) return true;
  const proc = await hasProc();
  let current = pid;
  // A chain of launchers is short; the bound only guards against a loop in what was read.
  for (let depth = 0; depth < 32; depth++) {
    const parent = await parentOf(current, proc);
    // Not even the first parent read: without /proc, `ps` is missing (or the process is gone).
    if (parent === undefined) return depth === 0 && !proc ? undefined : false;
    if (parent === ancestor) return true;
    if (parent <= 1) return false;
    current = parent;
  }
  return false;
}
