/**
 * The events listener of `teamctl worker --events-listen` (worker/events-listener.ts) over HTTP,
 * with deliveries signed by the `standardwebhooks` library as acs-server signs them, and a
 * stand-in for the Temporal client (the real one is exercised in push-waits.long.test.ts): what it
 * verifies, what it passes over, whom it signals, and when it answers 503 so that the service
 * delivers again.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/client';
import { parseListenAddress, secretsFrom, startEventsListener } from '../../worker/events-listener.ts';
import type { EventsListener } from '../../worker/events-listener.ts';
import type { MessageSignal } from '../../workflows/pipeline-waits.ts';
import { AcsClient } from '../../client/acs-client.ts';
import { buildTeam, startHarness } from '../service/helpers.ts';

const SECRET = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
const NEXT = `whsec_${Buffer.alloc(32, 2).toString('base64')}`;

/** A Temporal client stand-in: visibility answers from `waiting` (query → workflow ids), signals recorded. */
function temporal(options: { waiting?: (query: string, call: number) => string[]; failSignals?: boolean; gone?: Set<string> } = {}) {
  const signals: Array<{ workflowId: string; signal: MessageSignal }> = [];
  const queries: string[] = [];
  const client = {
    workflow: {
      async *list({ query }: { query: string }) {
        queries.push(query);
        for (const workflowId of options.waiting?.(query, queries.length) ?? []) yield { workflowId };
      },
      getHandle: (workflowId: string) => ({
        async signal(_definition: unknown, signal: MessageSignal) {
          if (options.failSignals) throw new Error('14 UNAVAILABLE: connection refused');
          if (options.gone?.has(workflowId)) throw new WorkflowNotFoundError('gone', workflowId, undefined);
          signals.push({ workflowId, signal });
        },
      }),
    },
  };
  return { client: client as unknown as Client, signals, queries };
}

/** A message.created event as acs-server writes it. */
function messageEvent(extra: Record<string, unknown> = {}, createdAt = new Date().toISOString()) {
  return {
    event_id: randomUUID(),
    seq: 7,
    type: 'message.created',
    org_id: randomUUID(),
    team_id: randomUUID(),
    created_at: createdAt,
    data: { message_id: 'm2', thread_id: 't1', sender_id: 'dana', content: 'approve', answers_message_id: 'm1', ...extra },
  };
}

/** POSTs `event` to the listener signed with `secrets` (Standard Webhooks headers). */
async function deliver(listener: EventsListener, event: Record<string, unknown> & { event_id: string }, secrets: string[] = [SECRET], path = '/'): Promise<number> {
  const body = JSON.stringify(event);
  const at = new Date();
  const signature = secrets.map((s) => new Webhook(s).sign(event.event_id, at, body)).join(' ');
  const response = await fetch(new URL(path, listener.url), {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'webhook-id': event.event_id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': signature },
    body,
  });
  return response.status;
}

/** The place `file` keeps for `orgId` once it says `seq` (30 s at most; the listener writes it after answering). */
async function placeIn(file: string, orgId: string, seq: number): Promise<number | undefined> {
  let kept: number | undefined;
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
    kept = await readFile(file, 'utf8').then((text) => JSON.parse(text).organizations[orgId]?.seq as number | undefined, () => undefined);
    if (kept === seq) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return kept;
}

let listeners: EventsListener[] = [];
afterEach(async () => {
  for (const l of listeners) await l.close();
  listeners = [];
});

async function listen(
  client: Client,
  secrets: string[] = [SECRET],
  extra: { lookupWindowMs?: number; stateFile?: string; readEvents?: Parameters<typeof startEventsListener>[0]['readEvents'] } = {},
): Promise<EventsListener> {
  const listener = await startEventsListener({ host: '127.0.0.1', port: 0, secrets, client, ...extra, lookupWindowMs: extra.lookupWindowMs ?? 600 });
  listeners.push(listener);
  return listener;
}

describe('events listener', () => {
  it('listener: a verified reply is signalled to every run waiting for its sender in its thread, then answered 204; a redelivery is answered without signalling again', async () => {
    const t = temporal({ waiting: (query) => (query.includes("'t1:dana'") ? ['run-a', 'run-b'] : []) });
    const listener = await listen(t.client);
    const event = messageEvent();
    expect(await deliver(listener, event)).toBe(204);
    expect(t.queries[0]).toBe("TeamctlAwaitingThreads = 't1:dana' AND ExecutionStatus = 'Running'");
    expect(t.signals.map((s) => s.workflowId)).toEqual(['run-a', 'run-b']);
    expect(t.signals[0]!.signal).toEqual({ event_id: event.event_id, thread_id: 't1', message_id: 'm2', sender_id: 'dana', content: 'approve', answers_message_id: 'm1' });
    expect(await deliver(listener, event)).toBe(204);
    expect(t.signals).toHaveLength(2);
  });

  it('listener: a delivery no secret verifies is 401 and signals nothing; during a rotation either secret verifies', async () => {
    const t = temporal({ waiting: () => ['run-a'] });
    const listener = await listen(t.client, [SECRET, NEXT]);
    expect(await deliver(listener, messageEvent(), [`whsec_${Buffer.alloc(32, 3).toString('base64')}`])).toBe(401);
    expect(t.signals).toEqual([]);
    expect(await deliver(listener, messageEvent(), [NEXT])).toBe(204);
    expect(await deliver(listener, messageEvent(), [SECRET])).toBe(204);
    expect(t.signals).toHaveLength(2);
    const tampered = await fetch(listener.url, { method: 'POST', body: '{}', headers: { 'webhook-id': 'x', 'webhook-timestamp': '1', 'webhook-signature': 'v1,AAAA' } });
    expect(tampered.status).toBe(401);
  });

  it('listener: events that cannot wake a run (another type, a message that answers nothing) are 204 without a query; other paths 404, other methods 405', async () => {
    const t = temporal();
    const listener = await listen(t.client);
    expect(await deliver(listener, { ...messageEvent(), type: 'team.created', data: {} })).toBe(204);
    expect(await deliver(listener, messageEvent({ answers_message_id: null }))).toBe(204);
    expect(t.queries).toEqual([]);
    expect(await deliver(listener, messageEvent(), [SECRET], '/hook')).toBe(404);
    expect((await fetch(listener.url)).status).toBe(405);
  });

  it('listener: a recent awaited answer that finds no run is looked for again (visibility lags) and then answered 503; an old one, or one of a service that does not say what it answers, is 204', async () => {
    let appears = false;
    const t = temporal({ waiting: () => (appears ? ['run-late'] : []) });
    const listener = await listen(t.client);
    expect(await deliver(listener, messageEvent())).toBe(503);
    expect(t.queries.length).toBeGreaterThan(1);
    appears = true;
    expect(await deliver(listener, messageEvent())).toBe(204);
    expect(t.signals.map((s) => s.workflowId)).toEqual(['run-late']);
    appears = false;
    expect(await deliver(listener, messageEvent({}, new Date(Date.now() - 10 * 60_000).toISOString()))).toBe(204);
    const withoutAnswers = messageEvent();
    delete (withoutAnswers.data as Record<string, unknown>)['answers_message_id'];
    expect(await deliver(listener, withoutAnswers)).toBe(204);
  });

  it('listener: when Temporal does not take the signal the answer is 503 (the service delivers again), and a run that ended meanwhile is no failure', async () => {
    const down = temporal({ waiting: () => ['run-a'], failSignals: true });
    const listener = await listen(down.client);
    const event = messageEvent();
    expect(await deliver(listener, event)).toBe(503);
    const ended = temporal({ waiting: () => ['run-a', 'run-b'], gone: new Set(['run-a']) });
    const second = await listen(ended.client);
    expect(await deliver(second, event)).toBe(204);
    expect(ended.signals.map((s) => s.workflowId)).toEqual(['run-b']);
  });

  it('catch-up: a listener started again reads the log from the last event it handled, so a reply written while it was down wakes its run at once, without a delivery', async () => {
    const h = await startHarness({ inMemory: true, logger: false, rateLimit: false });
    try {
      const ids = await buildTeam(h);
      const client = new AcsClient({ baseUrl: h.server.url, apiKey: h.apiKey });
      const readEvents = (orgId: string, after: number | undefined, limit: number) => client.listEvents(orgId, { ...(after !== undefined ? { after } : {}), types: ['message.created'], limit });
      // The run's question: the agent asks ann, awaiting her reply.
      const question = (await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.agentId, content: 'Ship v2?', expects_reply: true })).body;
      const threadId = question.thread_id as string;
      const t = temporal({ waiting: (query) => (query.includes(`'${threadId}:${ids.humanId}'`) ? ['run-a'] : []) });
      const stateFile = join(await mkdtemp(join(tmpdir(), 'teamctl-listener-')), 'state', 'events.json');

      // The webhook delivers the question; the listener keeps its place there.
      const first = await listen(t.client, [SECRET], { stateFile, readEvents });
      const asked = (await client.listEvents(h.orgId, { types: ['message.created'] })).events.at(-1)!;
      expect(await deliver(first, asked)).toBe(204);
      expect(await placeIn(stateFile, h.orgId, asked.seq)).toBe(asked.seq);
      await first.close();

      // While no listener runs, ann answers: the webhook's attempt fails, its retry is minutes away.
      await h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: ids.humanId, content: 'approve' });
      const answer = (await client.listEvents(h.orgId, { types: ['message.created'] })).events.at(-1)!;

      const second = await listen(t.client, [SECRET], { stateFile, readEvents });
      expect(await second.caughtUp).toEqual([{ org_id: h.orgId, after: asked.seq, events: 1, passedOn: 1 }]);
      expect(t.signals).toEqual([
        { workflowId: 'run-a', signal: { event_id: answer.event_id, thread_id: threadId, message_id: expect.any(String), sender_id: ids.humanId, content: 'approve', answers_message_id: expect.any(String) } },
      ]);
      expect(second.counts).toEqual({});
      expect(await placeIn(stateFile, h.orgId, answer.seq)).toBe(answer.seq);
      // The webhook's retry comes later: passed over, the run is not signalled twice.
      expect(await deliver(second, answer)).toBe(204);
      expect(t.signals).toHaveLength(1);
    } finally {
      await h.server.close();
    }
  });

  it('catch-up: a place beyond the log (another database) is reported and forgotten; a service that cannot be reached is reported and the place kept for the next start', async () => {
    const h = await startHarness({ inMemory: true, logger: false, rateLimit: false });
    const stateFile = join(await mkdtemp(join(tmpdir(), 'teamctl-listener-')), 'events.json');
    try {
      const unreachable = randomUUID();
      await writeFile(stateFile, JSON.stringify({ version: 1, organizations: { [h.orgId]: { seq: 999_999, updated_at: new Date().toISOString() }, [unreachable]: { seq: 5, updated_at: new Date().toISOString() } } }));
      const client = new AcsClient({ baseUrl: h.server.url, apiKey: h.apiKey });
      const nowhere = new AcsClient({ baseUrl: 'http://127.0.0.1:1', apiKey: h.apiKey });
      const readEvents = (orgId: string, after: number | undefined, limit: number) =>
        (orgId === h.orgId ? client : nowhere).listEvents(orgId, { ...(after !== undefined ? { after } : {}), types: ['message.created'], limit });
      const listener = await listen(temporal().client, [SECRET], { stateFile, readEvents });
      const reports = await listener.caughtUp;
      expect(reports).toEqual([
        { org_id: h.orgId, after: 999_999, events: 0, passedOn: 0, error: expect.stringContaining('beyond the newest event') },
        { org_id: unreachable, after: 5, events: 0, passedOn: 0, error: expect.stringContaining('127.0.0.1:1') },
      ]);
      await listener.close();
      listeners = listeners.filter((l) => l !== listener);
      expect(JSON.parse(await readFile(stateFile, 'utf8')).organizations).toEqual({ [unreachable]: { seq: 5, updated_at: expect.any(String) } });
    } finally {
      await h.server.close();
    }
  });

  it('catch-up: the place kept is the last event handled, never past one answered 503 until it is handled; a file that is not a state file is refused, naming it', async () => {
    const options: { waiting: () => string[]; failSignals: boolean } = { waiting: () => ['run-a'], failSignals: true };
    const t = temporal(options);
    const stateFile = join(await mkdtemp(join(tmpdir(), 'teamctl-listener-')), 'events.json');
    const listener = await listen(t.client, [SECRET], { stateFile });
    const orgId = randomUUID();
    const at = (seq: number) => ({ ...messageEvent(), seq, org_id: orgId });
    const five = at(5);
    expect(await deliver(listener, five)).toBe(503);
    options.failSignals = false;
    expect(await deliver(listener, at(8))).toBe(204);
    expect(await placeIn(stateFile, orgId, 4)).toBe(4);
    expect(await deliver(listener, five)).toBe(204);
    expect(await placeIn(stateFile, orgId, 8)).toBe(8);
    await listener.close();
    listeners = listeners.filter((l) => l !== listener);

    await writeFile(stateFile, '{"version": 2, "organizations": {}}');
    await expect(listen(t.client, [SECRET], { stateFile })).rejects.toThrow(`${stateFile} is not an events listener's state file (version: Invalid input: expected 1); move it away or delete it`);
    await writeFile(stateFile, 'not json');
    await expect(listen(t.client, [SECRET], { stateFile })).rejects.toThrow(`${stateFile} is not an events listener's state file`);
    // Left as it was.
    expect(await readFile(stateFile, 'utf8')).toBe('not json');
  });

  it('listener flags: HOST:PORT and [IPv6]:PORT parse; the secrets come from the variable, comma-separated, and a missing or malformed one is named, never shown', () => {
    expect(parseListenAddress('0.0.0.0:8787')).toEqual({ host: '0.0.0.0', port: 8787 });
    expect(parseListenAddress('[::1]:9')).toEqual({ host: '::1', port: 9 });
    expect(() => parseListenAddress('8787')).toThrow('expected HOST:PORT');
    expect(secretsFrom({ S: `${SECRET}, ${NEXT}` }, 'S')).toEqual([SECRET, NEXT]);
    expect(() => secretsFrom({}, 'TEAMCTL_EVENTS_SECRET')).toThrow('set TEAMCTL_EVENTS_SECRET');
    expect(() => secretsFrom({ S: 'hunter2-not-a-secret' }, 'S')).toThrow(/S holds a value that is not a webhook secret/);
    expect(() => secretsFrom({ S: 'hunter2-not-a-secret' }, 'S')).not.toThrow(/hunter2/);
  });
});
