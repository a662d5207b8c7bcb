/**
 * A2A push-notification configs delivered as §9 webhooks (contract §12, service/a2a/push-configs.ts):
 * `@a2a-js/sdk`'s client sets, reads, lists and deletes configs of its tasks; a receiver on loopback
 * (the server allows private URLs) gets A2A's notification of each change of the task, signed per
 * Standard Webhooks with its token as the secret, with the token and the authentication; failures
 * are retried and listed in the webhook delivery log; callers without an edge write nothing.
 */
import { StreamResponse, TaskState, type Task, type TaskPushNotificationConfig } from '@a2a-js/sdk';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from '../service/helpers.ts';
import { orgEvents, until } from '../service/turn-helpers.ts';
import { startReceiver, type Received, type Receiver } from '../support/webhook-receiver.ts';
import { a2aClient, sendRequest, startA2aWorld, userMessage, type A2aWorld } from './a2a-helpers.ts';

let w: A2aWorld;
let receiver: Receiver;
beforeAll(async () => {
  w = await startA2aWorld({ webhooks: { allowPrivate: true, retrySchedule: [100, 200], pollMs: 200 } });
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await w?.close();
});

/** A config for `url` as the SDK's types spell it. */
function pushConfig(url: string, fields: Partial<TaskPushNotificationConfig> = {}): TaskPushNotificationConfig {
  return { tenant: '', id: '', taskId: '', url, token: '', authentication: undefined, ...fields };
}

/** The Task a received notification carries (A2A's StreamResponse JSON). */
function notifiedTask(received: Received): Task {
  const response = StreamResponse.fromJSON(JSON.parse(received.body));
  if (response.payload?.$case !== 'task') throw new Error(`not a task notification: ${received.body}`);
  return response.payload.value;
}

/** The notifications received for task `taskId`. */
function notificationsOf(taskId: string): Received[] {
  return receiver.received.filter((r) => r.event?.task?.id === taskId);
}

/** A JSON-RPC 1.0 call to `url` with `key`. */
async function rpc(url: string, key: string, method: string, params: unknown) {
  return request(url, 'POST', { jsonrpc: '2.0', id: 1, method, params }, { 'x-api-key': key, 'a2a-version': '1.0' });
}

/** A task of `caller` at the asker agent (it waits on a person, so it stays working). */
async function waitingTask(): Promise<Task> {
  const client = await a2aClient(w.cardUrl('asker'), w.callerKey);
  const task = (await client.sendMessage(sendRequest(userMessage('deploy on friday'), true))) as Task;
  await until(() => client.getTask({ tenant: '', id: task.id, historyLength: undefined }), (t) => t.status?.state === TaskState.TASK_STATE_WORKING, 'the asker\'s task to be working');
  return task;
}

describe('push notifications', () => {
  it('a receiver of a config given with SendMessage gets a signed notification with the token for each change of the task until it is completed', async () => {
    const token = `tok-${crypto.randomUUID()}`;
    const client = await a2aClient(w.cardUrl('writer'), w.callerKey);
    const send = sendRequest(userMessage('a haiku about queues'));
    send.configuration!.taskPushNotificationConfig = pushConfig(receiver.url, { token, authentication: { scheme: 'Bearer', credentials: 'receiver-secret' } });
    const task = (await client.sendMessage(send)) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    // One notification per task.* event of the task, from its creation to its completion.
    const events = (await orgEvents(w.h, 'task.*')).filter((e) => (e.data as { task_id: string }).task_id === task.id);
    expect(events.length).toBeGreaterThanOrEqual(3);
    await receiver.waitFor(events.length, (r) => r.event?.task?.id === task.id);
    const received = notificationsOf(task.id);
    expect(received.map((r) => r.headers['webhook-id']).sort()).toEqual(events.map((e) => (e as typeof e & { event_id: string }).event_id).sort());
    const signer = new StandardWebhook(Buffer.from(token).toString('base64'));
    for (const r of received) {
      expect(() => signer.verify(r.body, r.headers as Record<string, string>)).not.toThrow();
      expect(r.headers['x-a2a-notification-token']).toBe(token);
      expect(r.headers.authorization).toBe('Bearer receiver-secret');
      expect(r.headers['content-type']).toBe('application/a2a+json');
    }
    const states = received.map((r) => notifiedTask(r).status?.state);
    expect(new Set(states)).toEqual(new Set([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED]));
    const completed = received.map(notifiedTask).find((t) => t.status?.state === TaskState.TASK_STATE_COMPLETED)!;
    expect(completed).toMatchObject({ id: task.id, contextId: task.contextId });
    expect(completed.artifacts.length).toBeGreaterThan(0);
    // The config reads back with its token, its scheme and no credentials.
    const { configs } = await client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' });
    expect(configs).toEqual([expect.objectContaining({ taskId: task.id, url: receiver.url, token, authentication: { scheme: 'Bearer', credentials: '' } })]);
  });

  it('a receiver failing twice is retried, and the webhook delivery log lists each attempt of each notification', async () => {
    const task = await waitingTask();
    const url = receiver.url.replace('/hook', '/flaky');
    const tries = new Map<string, number>();
    receiver.answer((r) => {
      if (!r.body.includes(task.id)) return { status: 200 };
      const id = String(r.headers['webhook-id']);
      const n = (tries.get(id) ?? 0) + 1;
      tries.set(id, n);
      return { status: n <= 2 ? 500 : 200 };
    });
    const client = await a2aClient(w.cardUrl('asker'), w.callerKey);
    const config = await client.createTaskPushNotificationConfig(pushConfig(url, { taskId: task.id }));
    expect(config.id).toMatch(/^[0-9a-f-]{36}$/);
    await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
    await receiver.waitFor(3, (r) => r.body.includes(task.id) && notifiedTask(r).status?.state === TaskState.TASK_STATE_CANCELED);
    // The config's id is its webhook's: its delivery log, read with the organization's key.
    const deliveries = await until(
      async () => (await w.h.call('GET', `/api/v1/webhooks/${config.id}/deliveries`)).body.deliveries as Array<Record<string, any>>,
      (list) => list.length > 0 && list.every((d) => d.status === 'delivered'),
      'the notifications to be delivered',
    );
    for (const delivery of deliveries) {
      expect(delivery.event_type).toBe('task.updated');
      expect(delivery.attempts.map((a: { status: string; response_status: number }) => `${a.status} ${a.response_status}`)).toEqual(['pending 500', 'pending 500', 'delivered 200']);
    }
    receiver.answer(() => ({ status: 200 }));
  });

  it('a config is set, read, listed and deleted by its task\'s requester; a URL that is not http(s) is refused', async () => {
    const task = await waitingTask();
    const client = await a2aClient(w.cardUrl('asker'), w.callerKey, 'HTTP+JSON');
    const mine = await client.createTaskPushNotificationConfig(pushConfig(receiver.url, { taskId: task.id, id: 'mine', token: 't1' }));
    expect(mine).toMatchObject({ id: 'mine', taskId: task.id, url: receiver.url, token: 't1' });
    const other = await client.createTaskPushNotificationConfig(pushConfig(receiver.url, { taskId: task.id }));
    const listed = await client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' });
    expect(listed.configs.map((c) => c.id)).toEqual(['mine', other.id]);
    expect(await client.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'mine' })).toMatchObject({ id: 'mine', token: 't1', url: receiver.url });
    await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'mine' });
    expect((await client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).configs.map((c) => c.id)).toEqual([other.id]);
    await expect(client.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'mine' })).rejects.toThrow(/not found/i);
    await expect(client.createTaskPushNotificationConfig(pushConfig('ftp://example.com/hook', { taskId: task.id }))).rejects.toThrow();
    expect((await client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).configs).toHaveLength(1);
    await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
  });

  it('a caller without an edge to the agent, or with another team\'s key, cannot set or list a task\'s configs, and nothing is written', async () => {
    const task = await waitingTask();
    const created = await w.h.call('POST', `/api/v1/agents/${w.team.id.stranger!}/mcp-keys`, {});
    expect(created.status).toBe(201);
    const strangerKey = created.body.mcp_key as string;
    for (const key of [strangerKey, w.outsiderKey]) {
      const set = await rpc(w.url('asker'), key, 'CreateTaskPushNotificationConfig', { taskId: task.id, url: `${receiver.url}?intruder` });
      expect(set.body.error?.code).toBe(-32001);
      const list = await rpc(w.url('asker'), key, 'ListTaskPushNotificationConfigs', { taskId: task.id });
      expect(list.body.error?.code).toBe(-32001);
    }
    const client = await a2aClient(w.cardUrl('asker'), w.callerKey);
    expect((await client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).configs).toEqual([]);
    await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
  });

  it('an agent card says it sends push notifications', async () => {
    const card = await request(w.cardUrl('echo'), 'GET', undefined, { 'x-api-key': w.callerKey, 'a2a-version': '1.0' });
    expect(card.body).toMatchObject({ capabilities: { pushNotifications: true } });
  });
});
