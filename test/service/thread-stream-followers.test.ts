/**
 * The one follower per thread and process (events/thread-stream.ts) and a reader that joins it
 * while it is still being set up: the follower's first look at where the thread's stream ends is
 * held back (the storage is wrapped: a slow statement, which cannot be caused otherwise), a second
 * reader joins meanwhile, a message is appended as another process would (straight
 * into the storage: this process hears of it late), then the look goes on. The second reader must
 * still get that message: no gap. On PGlite here, on PostgreSQL in the `postgres` project.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { insertMessage } from '../../service/domain/threads.ts';
import type { Db } from '../../service/storage/db.ts';
import { startHarnessWithDb, type Harness } from './helpers.ts';
import { readThread } from './stream-helpers.ts';
import { makeTeam, openThread } from './turn-helpers.ts';

/** Where the stream ends (events/thread-stream.ts `streamEnd`): the follower's first look. */
const isStreamEnd = (sql: string) => sql.includes('SELECT message_count, stream_after, stream_k FROM threads');

/** Which thread a stream request is for, and whether the caller reaches it (domain/replies.ts `threadForCaller`). */
const isThreadLookup = (sql: string) => sql.includes('SELECT t.org_id, th.message_count FROM threads th');

/** The next look at the stream's end waits until released (armed by the test). */
const gate = { armed: false, reached: () => {}, release: () => {} };

/** Called once the next thread lookup of a stream request has answered (armed by the test). */
let lookedUp: (() => void) | undefined;

let h: Harness & { db: Db };

beforeAll(async () => {
  h = await startHarnessWithDb('followers', {
    wrap: (db) => ({
      async query(sql: string, params?: unknown[]) {
        if (gate.armed && isStreamEnd(sql)) {
          gate.armed = false;
          const go = new Promise<void>((resolve) => (gate.release = resolve));
          gate.reached();
          await go;
        }
        const rows = await db.query(sql, params);
        if (lookedUp && isThreadLookup(sql)) {
          const done = lookedUp;
          lookedUp = undefined;
          done();
        }
        return rows;
      },
      transaction: (fn) => db.transaction(fn),
      close: () => db.close(),
    }) as Db,
  });
});
afterAll(async () => {
  gate.release();
  await h.server.close();
});

it('thread stream followers: a reader that joins a follower still being set up gets a message appended meanwhile by another process (no gap)', async () => {
  const team = await makeTeam(h, { humans: ['dana', 'erin'], agents: [], edges: [['dana', 'erin']] });
  const thread = await openThread(h, team.edgeOf('dana', 'erin'), team.id.dana!, 'm1');
  const key = { 'x-api-key': h.apiKey };

  // The first reader starts the follower, whose look at the stream's end is held.
  const reached = new Promise<void>((resolve) => (gate.reached = resolve));
  gate.armed = true;
  const first = readThread(h.server.url, thread, key, { after: '1' });
  await reached;
  // A second reader comes meanwhile. Its request is let go up to where it joins the follower (its
  // thread looked up, then a turn of the event loop: were it to catch up now, its read would be
  // issued before the append below).
  const joining = new Promise<void>((resolve) => (lookedUp = resolve));
  const secondOpening = readThread(h.server.url, thread, key, { after: '1' });
  await joining;
  await new Promise((resolve) => setImmediate(resolve));
  // Another process appends m2: this one hears of it only later.
  await h.db.transaction((tx) => insertMessage(tx, thread, team.id.erin!, 'm2'));
  // The follower's look goes on, and sees m2 already there.
  gate.release();
  const [firstReader, second] = await Promise.all([first, secondOpening]);
  expect([firstReader.status, second.status]).toEqual([200, 200]);
  const m3 = await h.call('POST', `/api/v1/threads/${thread}/messages`, { sender_agent_id: team.id.dana, content: 'm3' });
  expect(m3.status).toBe(201);

  for (const [name, reader] of [['the first reader', firstReader], ['the second reader', second]] as const) {
    const items = await reader.until((i) => i.data.message_id === m3.body.message_id, 'm3');
    reader.close();
    expect(items.map((i) => [i.id, i.event, i.data.content]), name).toEqual([
      ['2', 'message.created', 'm2'],
      ['3', 'message.created', 'm3'],
    ]);
  }
});
