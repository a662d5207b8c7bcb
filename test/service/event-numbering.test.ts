import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Notifier } from '../../service/domain/notifier.ts';
import { allTopic, createEventHub, type EventHub } from '../../service/events/hub.ts';
import type { StoredEvent } from '../../service/events/log.ts';
import { openDb } from '../../service/storage/open-db.ts';
import type { Db } from '../../service/storage/db.ts';

// When the events of an announcement get their numbers (service/events/hub.ts): at once when a
// subscriber waits for them, in this process or another; otherwise together, `coalesceMs` later.
// The hubs here put numbering off for a minute, so whatever is numbered sooner was numbered
// because someone waited, not because the window ended.

const aMinute = 60_000;
let db: Db;

beforeAll(async () => {
  db = await openDb({ inMemory: true });
});
afterAll(async () => {
  await db.close();
});

/** Several processes' notifiers on one bus: each tells the others, as LISTEN/NOTIFY does (storage/pg-notifier.ts). */
function notifierBus(): () => Notifier {
  const bus = new EventEmitter();
  bus.setMaxListeners(0);
  return () => {
    const own = new EventEmitter();
    own.setMaxListeners(0);
    const relay = (from: Notifier, key: string) => from !== notifier && own.emit(key);
    bus.on('publish', relay);
    const notifier: Notifier = {
      publish: (key) => void bus.emit('publish', notifier, key),
      subscribe(key, listener) {
        own.on(key, listener);
        return () => own.off(key, listener);
      },
      async close() {
        bus.off('publish', relay);
      },
    };
    return notifier;
  };
}

/**
 * A hub of one process that puts numbering off for a minute (or `coalesceMs`) and never sweeps
 * nor polls within a test; `notifier` joins it to other processes (default: alone).
 */
function hubOf(notifier: Notifier = notifierBus()(), coalesceMs = aMinute): EventHub {
  return createEventHub({ db, notifier, coalesceMs, sweepMs: aMinute, pollMs: aMinute });
}

/** A writing and a reading process on one notifier bus; `close` stops both. */
function twoProcesses(): { writer: EventHub; reader: EventHub; close: () => Promise<void> } {
  const processes = notifierBus();
  const writer = hubOf(processes());
  const reader = hubOf(processes());
  return { writer, reader, close: async () => void (await Promise.all([writer.close(), reader.close()])) };
}

/** Commits `count` events of `orgId` (as a change's transaction writes them: without a seq). */
async function writeEvents(orgId: string, count: number): Promise<void> {
  for (let i = 0; i < count; i += 1) {
    await db.query(`SELECT acs_append_event($1, NULL, 'team.created', json_build_object('n', $2::int))`, [orgId, i]);
  }
}

async function unnumbered(orgId: string): Promise<number> {
  const [row] = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM events WHERE org_id = $1 AND seq IS NULL`, [orgId]);
  return row!.n;
}

/** Resolves with the events `hub` hands to a subscriber of everything of `orgId`, up to the one numbered `lastSeq`. */
async function collect(hub: EventHub, orgId: string, lastSeq: number): Promise<{ head: number; events: Promise<StoredEvent[]>; stop: () => void }> {
  const got: StoredEvent[] = [];
  let done: (events: StoredEvent[]) => void = () => {};
  const events = new Promise<StoredEvent[]>((resolve) => (done = resolve));
  const subscription = await hub.subscribe(orgId, allTopic, (batch) => {
    got.push(...batch);
    if (got.some((event) => event.seq === lastSeq)) done(got);
  });
  return { head: subscription.head, events, stop: () => subscription.unsubscribe() };
}

describe('event numbering', () => {
  it('numbering: announcements no subscriber waits for are numbered later, all by one statement', async () => {
    const orgId = randomUUID();
    const hub = hubOf();
    try {
      for (let i = 0; i < 5; i += 1) {
        await writeEvents(orgId, 1);
        hub.announce(orgId);
      }
      // A numbering starts synchronously in announce, so none started.
      expect(hub.stats().sequencings).toBe(0);
      expect(await unnumbered(orgId)).toBe(5);
      // A reader numbers what it reads first: one statement for the five.
      await hub.settle(orgId);
      expect(hub.stats().sequencings).toBe(1);
      expect(await unnumbered(orgId)).toBe(0);
      const seqs = await db.query<{ seq: string }>(`SELECT seq FROM events WHERE org_id = $1 ORDER BY n`, [orgId]);
      expect(seqs.map((row) => Number(row.seq))).toEqual([1, 2, 3, 4, 5]);
    } finally {
      await hub.close();
    }
  });

  it('numbering: with a subscriber of the organization in the process, an announcement is numbered and handed out at once', async () => {
    const orgId = randomUUID();
    const hub = hubOf();
    try {
      const { events, stop } = await collect(hub, orgId, 2);
      await writeEvents(orgId, 2);
      hub.announce(orgId);
      expect((await events).map((event) => event.seq)).toEqual([1, 2]);
      stop();
    } finally {
      await hub.close();
    }
  });

  it('numbering: a subscriber that arrives while a numbering is put off has it run first: what was committed before is at or below its head', async () => {
    const orgId = randomUUID();
    const hub = hubOf();
    try {
      await writeEvents(orgId, 3);
      hub.announce(orgId);
      const { head, events, stop } = await collect(hub, orgId, 4);
      expect(head).toBe(3);
      await writeEvents(orgId, 1);
      hub.announce(orgId);
      expect((await events).map((event) => event.seq)).toEqual([4]);
      expect(await unnumbered(orgId)).toBe(0);
      stop();
    } finally {
      await hub.close();
    }
  });

  it('numbering: a subscriber in one process numbers what another process committed and put off before it subscribed', async () => {
    const orgId = randomUUID();
    const { writer, reader, close } = twoProcesses();
    try {
      await writeEvents(orgId, 2);
      writer.announce(orgId);
      const { head, stop } = await collect(reader, orgId, 99);
      expect(head).toBe(2);
      expect(writer.stats().sequencings).toBe(0);
      stop();
    } finally {
      await close();
    }
  });

  it('numbering: a process whose subscribers follow the organization numbers what another process wrote and put off, as soon as it is told', async () => {
    const orgId = randomUUID();
    const { writer, reader, close } = twoProcesses();
    try {
      const { events, stop } = await collect(reader, orgId, 3);
      await writeEvents(orgId, 3);
      writer.announce(orgId);
      expect((await events).map((event) => event.seq)).toEqual([1, 2, 3]);
      expect(writer.stats().sequencings).toBe(0);
      stop();
    } finally {
      await close();
    }
  });

  it('numbering: closing the hub numbers what it put off, so a graceful stop leaves nothing for the sweep', async () => {
    const orgId = randomUUID();
    const hub = hubOf();
    await writeEvents(orgId, 2);
    hub.announce(orgId);
    expect(await unnumbered(orgId)).toBe(2);
    await hub.close();
    expect(await unnumbered(orgId)).toBe(0);
  });

  it('numbering: coalesceMs 0 numbers every announcement at once', async () => {
    const orgId = randomUUID();
    const hub = hubOf(notifierBus()(), 0);
    try {
      await writeEvents(orgId, 1);
      hub.announce(orgId);
      expect(hub.stats().sequencings).toBe(1);
    } finally {
      await hub.close();
    }
  });
});
