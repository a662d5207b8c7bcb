/**
 * Where the events listener of `teamctl worker --events-listen` is in each organization's event
 * log (contract §9: `seq` increases per organization): a small JSON file, so that a worker
 * restarted after a crash reads the log from the last event it handled
 * (`worker/events-listener.ts`, "Catching up") instead of waiting for the webhook's next retry.
 *
 * Why a file and not Temporal: the position belongs to one listener (several may listen, each
 * behind its own webhook or URL), changes with every delivery, and is only a shortcut — losing it
 * delays replies until the webhook's retry or the run's reconcile read, as before, and loses
 * nothing. A file costs one small write per delivery; keeping it in Temporal would cost a workflow
 * and history events per delivery.
 *
 * The file: `{"version": 1, "organizations": {"<org_id>": {"seq": 42, "updated_at": "…"}}}`,
 * written whole to a temporary file and renamed over the old one (a crash leaves the old or the
 * new, never half of one); one write at a time, the latest state written after it.
 *
 * The position of an organization is the highest `seq` handled, but never past an event answered
 * 503 (not passed on: Temporal unreachable, its run not found yet) in the last hour and not handled
 * since: a restart reads that event again.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { z } from 'zod';

/** How long an event answered 503 holds the position back, in ms: then the webhook's retries are left to deliver it. */
const unsettledForMs = 3_600_000;

/** The state file's shape (version 1). */
const StateFile = z.strictObject({
  version: z.literal(1),
  organizations: z.record(z.uuid(), z.strictObject({ seq: z.number().int().min(0), updated_at: z.string() })),
});

/** The listener's place in the event logs, kept in a file (see the module comment). */
export interface EventsPosition {
  /** The file it is kept in. */
  readonly file: string;
  /** The position of each organization as read at start: events after it are read again. */
  readonly atStart: ReadonlyMap<string, number>;
  /** The event `seq` of `orgId` was handled (passed on, or nothing to pass on). */
  handled(orgId: string, seq: number): void;
  /** The event `seq` of `orgId` was not passed on (answered 503): the position stays before it until it is handled. */
  unsettled(orgId: string, seq: number): void;
  /**
   * While the log of `orgId` is read from `seq` on (the catch-up), the place kept stays at most
   * there, whatever deliveries are handled meanwhile: a crash during the catch-up reads again what
   * it had not read yet. `undefined` ends it.
   */
  readingFrom(orgId: string, seq: number | undefined): void;
  /** Drops the place kept for `orgId` (its log is not the one it was kept in): kept anew from its next event handled. */
  forget(orgId: string): void;
  /** Settles when what was recorded so far is in the file. Errors: the file system's (EACCES, ENOSPC, …). */
  flush(): Promise<void>;
}

/**
 * The default file of a listener on `port`: `$XDG_STATE_HOME/teamctl/events-listener-PORT.json`
 * (`~/.local/state/…` when the variable is unset). Input: the environment and the listen port.
 */
export function defaultPositionFile(env: NodeJS.ProcessEnv, port: number): string {
  const base = env.XDG_STATE_HOME || join(env.HOME || homedir(), '.local', 'state');
  return join(base, 'teamctl', `events-listener-${port}.json`);
}

/**
 * Opens the position kept in `file` (absent: no position yet; created at the first event
 * handled). Output: an {@link EventsPosition}. Errors: a message naming the file when it holds
 * something else than a position (it is left as it is); the file system's when it cannot be read.
 * A failed write is passed to `onWriteError` (the listener goes on; the next write tries again).
 */
export async function openEventsPosition(file: string, onWriteError: (error: Error) => void = () => {}): Promise<EventsPosition> {
  const atStart = new Map<string, number>();
  let text: string | undefined;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  if (text !== undefined) {
    let parsed: z.infer<typeof StateFile>;
    try {
      parsed = StateFile.parse(JSON.parse(text));
    } catch (error) {
      const why = error instanceof z.ZodError ? error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ') : (error as Error).message;
      throw new Error(`${file} is not an events listener's state file (${why}); move it away or delete it (the listener then starts without catching up), or name another file with --events-state`);
    }
    for (const [orgId, entry] of Object.entries(parsed.organizations)) atStart.set(orgId, entry.seq);
  }

  /** Per organization: the highest seq handled (0: none yet), and the events answered 503 since (seq → when). */
  interface Entry {
    handled: number;
    unsettled: Map<number, number>;
    /** The catch-up's place while it reads (see `readingFrom`). */
    reading?: number;
    updatedAt: string;
  }
  const organizations = new Map<string, Entry>([...atStart].map(([orgId, seq]) => [orgId, { handled: seq, unsettled: new Map(), updatedAt: new Date().toISOString() }]));
  let writing: Promise<void> | undefined;
  let dirty = false;

  const stored = (entry: Entry) => {
    // An event not passed on for an hour is left to the webhook's retries (it may have gone to another listener).
    for (const [seq, since] of entry.unsettled) if (Date.now() - since > unsettledForMs) entry.unsettled.delete(seq);
    const handled = entry.reading === undefined ? entry.handled : Math.min(entry.handled, entry.reading);
    return entry.unsettled.size === 0 ? handled : Math.min(handled, Math.min(...entry.unsettled.keys()) - 1);
  };
  const entryOf = (orgId: string) => {
    let entry = organizations.get(orgId);
    if (!entry) organizations.set(orgId, (entry = { handled: 0, unsettled: new Map(), updatedAt: '' }));
    return entry;
  };

  /** Writes the latest state, then again while it changed during the write. */
  const write = (): Promise<void> => {
    if (writing) return writing;
    writing = (async () => {
      try {
        while (dirty) {
          dirty = false;
          const content = {
            version: 1 as const,
            // An organization none of whose events was handled yet has no position (0 would read its whole log).
            organizations: Object.fromEntries(
              [...organizations].flatMap(([orgId, entry]) => (entry.handled > 0 ? [[orgId, { seq: stored(entry), updated_at: entry.updatedAt }]] : [])),
            ),
          };
          const temporary = `${file}.${process.pid}.tmp`;
          await mkdir(dirname(file), { recursive: true });
          await writeFile(temporary, `${JSON.stringify(content, null, 2)}\n`);
          await rename(temporary, file);
        }
      } finally {
        writing = undefined;
      }
    })();
    return writing;
  };
  const changed = () => {
    dirty = true;
    void write().catch((error: Error) => {
      dirty = true;
      onWriteError(error);
    });
  };

  return {
    file,
    atStart,
    handled(orgId, seq) {
      const entry = entryOf(orgId);
      const before = stored(entry);
      entry.unsettled.delete(seq);
      entry.handled = Math.max(entry.handled, seq);
      entry.updatedAt = new Date().toISOString();
      if (stored(entry) !== before) changed();
    },
    unsettled(orgId, seq) {
      const entry = entryOf(orgId);
      const before = stored(entry);
      if (!entry.unsettled.has(seq)) entry.unsettled.set(seq, Date.now());
      if (stored(entry) !== before) changed();
    },
    readingFrom(orgId, seq) {
      const entry = entryOf(orgId);
      const before = stored(entry);
      if (seq === undefined) delete entry.reading;
      else entry.reading = seq;
      if (stored(entry) !== before) changed();
    },
    forget(orgId) {
      if (organizations.delete(orgId)) changed();
    },
    async flush() {
      while (writing) await writing;
      if (dirty) await write();
    },
  };
}
