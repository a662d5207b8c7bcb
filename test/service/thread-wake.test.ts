import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalNotifier } from '../../service/domain/notifier.ts';
import { createSecretBox } from '../../service/domain/secret-box.ts';
import { appendMessageAsParticipant, getThreadPage } from '../../service/domain/threads.ts';
import type { Caller, DomainDeps } from '../../service/domain/caller.ts';
import { createEventHub, threadTopic } from '../../service/events/hub.ts';
import { createWakeOneQueues } from '../../service/events/wake-one.ts';
import type { Db } from '../../service/storage/db.ts';
import { buildTeam, startHarnessWithDb, type Harness } from './helpers.ts';

// A long poll of a thread woken by an append through its own process answers with the message
// the append carried (issue 19: the wake does not wait for the event's numbering nor for a read).
// The page-read statement is the only one that selects `cursor_seq`.
const isPageRead = (sql: string) => sql.includes('cursor_seq');

let h: Harness & { db: Db & { statements: string[] } };

beforeAll(async () => {
  h = await startHarnessWithDb('wake', {
    wrap: (db) => {
      const statements: string[] = [];
      return {
        statements,
        query: (sql: string, params?: unknown[]) => (statements.push(sql), db.query(sql, params)),
        transaction: (fn) => db.transaction((tx) => fn({ query: (sql: string, params?: unknown[]) => (statements.push(sql), tx.query(sql, params)) })),
        close: () => db.close(),
      } as Db & { statements: string[] };
    },
  });
});
afterAll(async () => {
  await h.server.close();
});

async function openedThread(): Promise<{ team: Awaited<ReturnType<typeof buildTeam>>; threadId: string; cursor: string }> {
  const team = await buildTeam(h);
  const opened = await h.call('POST', `/api/v1/edges/${team.edgeId}/threads`, { sender_agent_id: team.humanId, content: 'first' });
  const threadId = opened.body.thread_id as string;
  const cursor = (await h.call('GET', `/api/v1/threads/${threadId}`)).body.next_after as string;
  return { team, threadId, cursor };
}

/** Starts a held poll and resolves once the server holds it (its first read done and a round trip later). */
async function held(threadId: string, cursor: string) {
  const waiting = h.call('GET', `/api/v1/threads/${threadId}?after=${cursor}&wait=30`);
  let settled = false;
  void waiting.then(() => (settled = true));
  await h.call('GET', '/api/v1/organizations');
  expect(settled).toBe(false);
  // In an object: awaiting the held() would otherwise await the poll itself.
  return { waiting };
}

describe('thread wake', () => {
  it('thread wake: a held poll woken by an append answers what a read right after the append returns, counters included, without reading the page', async () => {
    const { team, threadId, cursor } = await openedThread();
    const { waiting } = await held(threadId, cursor);
    const posted = await h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: team.agentId, content: 'approve?', expects_reply: true });
    expect(posted.status).toBe(201);
    const answered = await waiting;
    const read = await h.call('GET', `/api/v1/threads/${threadId}?after=${cursor}`);
    expect(answered.status).toBe(200);
    expect(answered.body).toEqual(read.body);
    expect(answered.body).toMatchObject({ message_count: 2, unread_count: 1, awaiting_reply_from: team.humanId, has_more: false, next_after: posted.body.message_id });
    expect(answered.body.messages).toEqual([posted.body]);
  });

  it("thread wake: the awaited participant's answer clears awaiting_reply_from in the woken poll's page too", async () => {
    const { team, threadId } = await openedThread();
    await h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: team.agentId, content: 'approve?', expects_reply: true });
    const cursor = (await h.call('GET', `/api/v1/threads/${threadId}`)).body.next_after as string;
    const { waiting } = await held(threadId, cursor);
    const posted = await h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: team.humanId, content: 'yes' });
    const answered = await waiting;
    expect(answered.body).toEqual((await h.call('GET', `/api/v1/threads/${threadId}?after=${cursor}`)).body);
    expect(answered.body).toMatchObject({ message_count: 3, awaiting_reply_from: null, messages: [posted.body] });
  });

  it('thread wake: a poll of another thread of the organization is not answered by the append', async () => {
    const one = await openedThread();
    const other = await openedThread();
    const waiting = h.call('GET', `/api/v1/threads/${other.threadId}?after=${other.cursor}&wait=1`);
    await h.call('POST', `/api/v1/threads/${one.threadId}/messages`, { sender_agent_id: one.team.agentId, content: 'not yours' });
    const answered = await waiting;
    expect(answered.body.messages).toEqual([]);
  });
});

describe('thread wake through the hub', () => {
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const pageReads = () => h.db.statements.filter(isPageRead).length;

  /** A hub of its own over the server's storage, and the domain deps over it: the test decides what the hub is told. */
  function ownDeps(): DomainDeps {
    // The server's hub numbers the events; this one learns of them by looking (every 50 ms).
    const events = createEventHub({ db: h.db, notifier: createLocalNotifier(), pollMs: 50 });
    return { db: h.db, events, inboxes: createWakeOneQueues(events), secrets: createSecretBox(randomBytes(32)) };
  }

  /** Starts a poll through `deps` and resolves once it listens for hints. */
  async function listening(deps: DomainDeps, threadId: string, cursor: string) {
    // The thread's opening was numbered later (the server's hub had no waiter then): numbered
    // now, before the poll's first read, the poll has no reason to read again once it subscribed.
    await deps.events.settle(h.orgId);
    let settled = false;
    const polling = getThreadPage(deps, { orgId: h.orgId, keyId: '' } satisfies Caller, threadId, { after: cursor, limit: 50, wait: 30 }).then((page) => ((settled = true), page));
    for (let i = 0; i < 1000 && deps.events.stats().hintListeners === 0; i += 1) await sleep(5);
    expect(deps.events.stats().hintListeners).toBe(1);
    return { polling, settled: () => settled };
  }

  it('thread wake: an append through the same process answers the held poll with its message and counters, without a page read', async () => {
    const { team, threadId, cursor } = await openedThread();
    const deps = ownDeps();
    try {
      const poll = await listening(deps, threadId, cursor);
      const reads = pageReads();
      const appended = await appendMessageAsParticipant(deps, h.orgId, threadId, { sender_agent_id: team.agentId, content: 'approve?', expects_reply: true });
      const page = await poll.polling;
      expect(pageReads()).toBe(reads);
      expect(page).toEqual(await getThreadPage(deps, { orgId: h.orgId, keyId: '' }, threadId, { after: cursor, limit: 50, wait: 0 }));
      expect(page.messages).toEqual([appended]);
      expect(deps.events.stats().hintListeners).toBe(0);
    } finally {
      await deps.events.close();
    }
  });

  it('thread wake: a hint whose message is not the next after the cursor is not answered as is: the poll reads, finds nothing, and waits on', async () => {
    const { team, threadId, cursor } = await openedThread();
    const deps = ownDeps();
    try {
      const poll = await listening(deps, threadId, cursor);
      const reads = pageReads();
      const far = { id: '00000000-0000-4000-8000-000000000000', thread_id: threadId, seq: 5, sender_id: team.agentId, content: 'not next', attachments: [], reply_to: null, expects_reply: false, sent_at: new Date(), org_id: h.orgId, thread_unread: 9, thread_awaiting: null };
      expect(deps.events.announce(h.orgId, [{ topic: threadTopic(threadId), detail: far }])).toBe(true);
      for (let i = 0; i < 1000 && pageReads() === reads; i += 1) await sleep(5);
      expect(pageReads()).toBeGreaterThan(reads);
      await sleep(20);
      expect(poll.settled()).toBe(false);
      const appended = await appendMessageAsParticipant(deps, h.orgId, threadId, { sender_agent_id: team.agentId, content: 'the next' });
      const page = await poll.polling;
      expect(page.messages).toEqual([appended]);
      expect(page).toMatchObject({ message_count: 2, unread_count: 1, next_after: appended.message_id });
    } finally {
      await deps.events.close();
    }
  });

  it('thread wake: announce tells hint listeners synchronously and says so, and the events are numbered and handed out after', async () => {
    const { team, threadId } = await openedThread();
    const { events } = ownDeps();
    try {
      const told: unknown[] = [];
      const handed: string[] = [];
      const stop = events.onHint(h.orgId, threadTopic(threadId), (detail) => told.push(detail));
      const subscription = await events.subscribe(h.orgId, threadTopic(threadId), (batch) => handed.push(...batch.map((e) => e.type)));
      expect(events.announce(h.orgId, [{ topic: threadTopic('another'), detail: 'x' }])).toBe(false);
      expect(told).toEqual([]);
      await h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: team.agentId, content: 'numbered' });
      expect(events.announce(h.orgId, [{ topic: threadTopic(threadId), detail: 'the detail' }])).toBe(true);
      expect(told).toEqual(['the detail']);
      for (let i = 0; i < 1000 && !handed.includes('message.created'); i += 1) await sleep(5);
      expect(handed).toContain('message.created');
      stop();
      expect(events.stats().hintListeners).toBe(0);
      expect(events.announce(h.orgId, [{ topic: threadTopic(threadId), detail: 'late' }])).toBe(false);
      expect(told).toEqual(['the detail']);
      subscription.unsubscribe();
    } finally {
      await events.close();
    }
  });
});
