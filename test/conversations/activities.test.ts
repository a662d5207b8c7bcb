/**
 * The conversation activities against a real acs-server, in a Temporal activity context
 * (`MockActivityEnvironment`): idempotent posts, waiting with a heartbeated cursor, resuming and
 * cancelling, and the keyring across a key rotation.
 */
import { CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConversationActivities } from '../../activities/conversation-activities.ts';
import { AcsClient } from '../../client/acs-client.ts';
import { startServer } from '../../service/index.ts';
import { quietLogger } from '../support/quiet-temporal.ts';

let server: Awaited<ReturnType<typeof startServer>>;
let client: AcsClient;
let orgId: string;
let apiKey: string;
let dana: string;
let triager: string;
let edgeId: string;

/** A raw call with a key (the key routes have no client method). */
async function withKey(key: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${server.url}/api/v1${path}`, {
    method,
    headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false });
  ({ org_id: orgId, api_key: apiKey } = await server.provisionOrganization('conversations'));
  client = new AcsClient({ baseUrl: server.url, apiKey });
  const team = await client.createTeam(orgId, { team_name: 'intake' });
  dana = (await client.createHuman(team.team_id, { name: 'dana' })).human_id;
  triager = (await client.createHuman(team.team_id, { name: 'triager' })).human_id;
  edgeId = (await client.createEdge(team.team_id, [dana, triager])).edge_id;
});

afterAll(async () => {
  await server?.close();
});

describe('conversation activities', () => {
  const connection = () => ({ baseUrl: server.url, apiKeyEnv: 'CONV_KEY' });
  const acts = () => createConversationActivities({ env: { CONV_KEY: apiKey } });

  it('openThread and sendMessage: a step run twice with its idempotency key posts once and answers the same ids', async () => {
    const open = { connection: connection(), edgeId, senderId: dana, content: 'Ticket 42 is down', subject: 'Ticket 42', idempotencyKey: 'wf-1/classify/open' };
    const first = (await new MockActivityEnvironment().run(acts().openThread, open)) as { threadId: string; messageId: string };
    const again = await new MockActivityEnvironment().run(acts().openThread, open);
    expect(again).toEqual(first);
    expect((await client.listThreads(edgeId)).filter((t) => t.thread_id === first.threadId)).toHaveLength(1);

    const send = { connection: connection(), threadId: first.threadId, senderId: dana, content: 'Any news?', idempotencyKey: 'wf-1/follow-up/send' };
    const sent = await acts().sendMessage(send);
    expect(await acts().sendMessage(send)).toEqual(sent);
    const page = await client.getThread(first.threadId);
    expect(page.messages.map((m) => m.content)).toEqual(['Ticket 42 is down', 'Any news?']);
  });

  it('waitForMessage: waits for the peer\'s message, skipping the sender\'s own, and heartbeats its cursor while it waits', async () => {
    const { threadId, messageId } = await acts().openThread({ connection: connection(), edgeId, senderId: dana, content: 'Classify this', idempotencyKey: 'wf-2/open' });
    const env = new MockActivityEnvironment();
    const beats: unknown[] = [];
    env.on('heartbeat', (details: unknown) => beats.push(details));
    const waiting = env.run(acts().waitForMessage, { connection: connection(), threadId, after: messageId, fromId: triager, deadline: Date.now() + 20_000 });
    const own = await client.appendMessage(threadId, { sender_agent_id: dana, content: 'still there?' });
    // The reply comes only once the wait has seen (and heartbeated past) the sender's own message.
    for (let i = 0; i < 200 && !beats.some((b) => (b as { after?: string }).after === own.message_id); i++) await new Promise((r) => setTimeout(r, 50));
    const reply = await client.appendMessage(threadId, { sender_agent_id: triager, content: 'P2: network' });
    const got = await waiting;
    expect(got).toMatchObject({ message_id: reply.message_id, content: 'P2: network' });
    expect(beats).toContainEqual({ after: own.message_id });
  });

  it('waitForMessage: a retried attempt resumes from the cursor of its last heartbeat', async () => {
    const { threadId, messageId } = await acts().openThread({ connection: connection(), edgeId, senderId: dana, content: 'Round one', idempotencyKey: 'wf-3/open' });
    const old = await client.appendMessage(threadId, { sender_agent_id: triager, content: 'old answer, already seen' });
    const fresh = await client.appendMessage(threadId, { sender_agent_id: triager, content: 'new answer' });
    const env = new MockActivityEnvironment({ heartbeatDetails: { after: old.message_id } });
    const got = (await env.run(acts().waitForMessage, { connection: connection(), threadId, after: messageId, fromId: triager, deadline: Date.now() + 10_000 })) as { message_id: string };
    expect(got.message_id).toBe(fresh.message_id);
  });

  it('waitForMessage: cancelled while it waits, it stops at once with a cancellation, and at its deadline it fails non-retryably with timed_out', async () => {
    const { threadId, messageId } = await acts().openThread({ connection: connection(), edgeId, senderId: dana, content: 'Nobody answers', idempotencyKey: 'wf-4/open' });
    const env = new MockActivityEnvironment();
    const waiting = env.run(acts().waitForMessage, { connection: connection(), threadId, after: messageId, fromId: triager, deadline: Date.now() + 60_000 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const cancelledAt = Date.now();
    env.cancel();
    await expect(waiting).rejects.toBeInstanceOf(CancelledFailure);
    expect(Date.now() - cancelledAt).toBeLessThan(5_000);

    // A failure on purpose: the SDK's warning about it stays out of the report.
    const late = await new MockActivityEnvironment(undefined, { logger: quietLogger })
      .run(acts().waitForMessage, { connection: connection(), threadId, after: messageId, fromId: triager, deadline: Date.now() + 1_000 })
      .catch((e: unknown) => e);
    expect(late).toMatchObject({ type: 'timed_out', nonRetryable: true });
  });

  it('keyring: after the key is rotated with grace 0 the next key of the keyring carries on; with every key refused the failure is non-retryable and names variables, not values', async () => {
    const spare = await server.provisionOrganization('conversations-rotation');
    const oldKey = spare.api_key;
    const spareClient = new AcsClient({ baseUrl: server.url, apiKey: oldKey });
    const team = await spareClient.createTeam(spare.org_id, { team_name: 'rotating' });
    const a = (await spareClient.createHuman(team.team_id, { name: 'a' })).human_id;
    const b = (await spareClient.createHuman(team.team_id, { name: 'b' })).human_id;
    const edge = (await spareClient.createEdge(team.team_id, [a, b])).edge_id;
    const ring = { baseUrl: server.url, apiKeyEnv: 'KEY_NOW', apiKeyEnvFallbacks: ['KEY_NEXT'] };

    const keys = await withKey(oldKey, 'GET', `/organizations/${spare.org_id}/keys`);
    const keyId = (keys.body.keys as Array<{ key_id: string }>)[0]!.key_id;
    const rotated = await withKey(oldKey, 'POST', `/organizations/${spare.org_id}/keys/${keyId}/rotate`, { grace_seconds: 0 });
    expect(rotated.status).toBe(201);
    const newKey = rotated.body.api_key as string;

    const ringActs = createConversationActivities({ env: { KEY_NOW: oldKey, KEY_NEXT: newKey } });
    const opened = await ringActs.openThread({ connection: ring, edgeId: edge, senderId: a, content: 'after rotation', idempotencyKey: 'wf-5/open' });
    expect(opened.threadId).toMatch(/^[0-9a-f-]{36}$/);

    const calls: string[] = [];
    const counting: typeof fetch = async (input, init) => {
      calls.push(String(input));
      return fetch(input, init);
    };
    const refused = await createConversationActivities({ env: { KEY_NOW: oldKey, KEY_NEXT: oldKey }, fetch: counting })
      .sendMessage({ connection: ring, threadId: opened.threadId, senderId: a, content: 'x', idempotencyKey: 'wf-5/send' })
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ type: 'keys_refused', nonRetryable: true });
    expect((refused as Error).message).toContain('KEY_NOW');
    expect((refused as Error).message).toContain('KEY_NEXT');
    expect((refused as Error).message).not.toContain(oldKey);
    // One try per key, no storm.
    expect(calls).toHaveLength(2);
  });
});
