import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcsApiError, AcsClient } from '../../client/index.ts';
import type { Event } from '../../api/events.ts';
import { startServer, type RunningServer } from '../../service/index.ts';
import { startReceiver, type Receiver } from '../support/webhook-receiver.ts';

// The client's methods for contract §9 against a real server: the log, the stream (with its
// reconnect from the last event), webhooks and their delivery log.

let server: RunningServer;
let client: AcsClient;
let orgId: string;
let receiver: Receiver;

beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 60_000, rateLimit: false, webhooks: { allowPrivate: true, retrySchedule: [100] } });
  const org = await server.provisionOrganization('client-events');
  orgId = org.org_id;
  client = new AcsClient({ baseUrl: server.url, apiKey: org.api_key });
  receiver = await startReceiver();
});

afterAll(async () => {
  await server?.close();
  await receiver?.close();
});

describe('client: events', () => {
  it('client: listEvents reads the log by page with filters, and streamEvents yields events from now on, in order', async () => {
    const controller = new AbortController();
    const stream = client.streamEvents(orgId, { types: ['team.*'], signal: controller.signal });
    const first = stream.next();
    const team = await client.createTeam(orgId, { team_name: 'streamed' });
    await client.updateTeam(team.team_id, { description: 'changed' });
    const got: Event[] = [(await first).value as Event, (await stream.next()).value as Event];
    expect(got.map((e) => e.type)).toEqual(['team.created', 'team.updated']);
    controller.abort();
    expect((await stream.next()).done).toBe(true);
    const page = await client.listEvents(orgId, { types: ['team.updated'] });
    expect(page.events.map((e) => e.seq)).toEqual([got[1]!.seq]);
    expect(page.next_after).toBe(got[1]!.seq);
    const held = await client.listEvents(orgId, { after: page.next_after, wait: 0.2 });
    expect(held).toEqual({ events: [], next_after: page.next_after });
    const error = await client.listEvents(orgId, { after: page.next_after + 100 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AcsApiError);
    expect((error as AcsApiError).code).toBe('invalid_cursor');
    const refused = await client.streamEvents(orgId, { after: page.next_after + 100 }).next().catch((e: unknown) => e);
    expect((refused as AcsApiError).code).toBe('invalid_cursor');
  });

  it('client: streamEvents reconnects from the last event it yielded when the connection drops', async () => {
    // A fetch whose first response body is cut after the first event.
    let calls = 0;
    const seenAfter: Array<string | null> = [];
    const cutting: typeof fetch = async (input, init) => {
      if (!String(input).includes('/events/stream')) return fetch(input, init);
      calls += 1;
      seenAfter.push(new Headers(init?.headers).get('last-event-id'));
      const response = await fetch(input, init);
      if (calls > 1) return response;
      const reader = response.body!.getReader();
      let sent = '';
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const { value, done } = await reader.read();
          if (done) return controller.close();
          controller.enqueue(value);
          sent += new TextDecoder().decode(value);
          if (/\ndata: /.test(sent)) {
            await reader.cancel();
            controller.close();
          }
        },
      });
      return new Response(body, { status: response.status, headers: response.headers });
    };
    const cutClient = new AcsClient({ baseUrl: server.url, apiKey: (await server.provisionOrganization('cut')).api_key, fetch: cutting });
    const own = (await cutClient.listOrganizations())[0]!.org_id;
    const controller = new AbortController();
    const stream = cutClient.streamEvents(own, { after: 0, signal: controller.signal, reconnectMs: 50 });
    // The stream connects at the first next(); its first event ends the first connection.
    const first = stream.next();
    await cutClient.createTeam(own, { team_name: 'one' });
    const one = ((await first).value as any).data.team_name;
    await cutClient.createTeam(own, { team_name: 'two' });
    const names = [one, ((await stream.next()).value as any).data.team_name];
    expect(names).toEqual(['one', 'two']);
    // The first connection from after=0; the second from the event it had yielded.
    expect(seenAfter).toEqual(['0', '1']);
    controller.abort();
  });

  it('client: a stream refused with a page that is not problem+json fails with the code any other request of the client gets for that status', async () => {
    // A proxy in front of the service answering its own HTML page: the code comes from the status.
    const proxyPage = (status: number): typeof fetch => async () => new Response('<html>nope</html>', { status, headers: { 'content-type': 'text/html' } });
    const failure = async (status: number, open: (client: AcsClient) => AsyncGenerator<unknown>) => {
      const client = new AcsClient({ baseUrl: server.url, apiKey: 'acs_test_unused', fetch: proxyPage(status) });
      const error = await open(client).next().then(() => undefined, (e: unknown) => e);
      expect(error).toBeInstanceOf(AcsApiError);
      return [(error as AcsApiError).status, (error as AcsApiError).code];
    };
    const orgId = '00000000-0000-4000-8000-000000000000';
    expect(await failure(404, (c) => c.streamEvents(orgId, { reconnect: false }))).toEqual([404, 'not_found']);
    expect(await failure(404, (c) => c.streamThread(orgId, { reconnect: false }))).toEqual([404, 'not_found']);
    expect(await failure(401, (c) => c.streamEvents(orgId, { reconnect: false }))).toEqual([401, 'unauthenticated']);
    const get = await new AcsClient({ baseUrl: server.url, apiKey: 'acs_test_unused', fetch: proxyPage(404) }).getTeam(orgId).then(() => undefined, (e: unknown) => e);
    expect((get as AcsApiError).code).toBe('not_found');
  });
});

describe('client: webhooks', () => {
  it('client: webhooks are created (secret once), listed, changed, rotated, their deliveries listed and retried, and deleted', async () => {
    const created = await client.createWebhook(orgId, { url: receiver.url, events: ['human.created'] });
    expect(created.secret).toMatch(/^whsec_/);
    expect((await client.listWebhooks(orgId)).map((w) => w.webhook_id)).toEqual([created.webhook_id]);
    expect(await client.getWebhook(created.webhook_id)).not.toHaveProperty('secret');
    const changed = await client.updateWebhook(created.webhook_id, { events: ['human.*'], description: 'humans' });
    expect(changed).toMatchObject({ events: ['human.*'], description: 'humans' });
    const rotated = await client.rotateWebhookSecret(created.webhook_id, { grace_seconds: 0 });
    expect(rotated.previous_secret_expires_at).toBeNull();
    const team = await client.createTeam(orgId, { team_name: 'hooked' });
    await client.createHuman(team.team_id, { name: 'ann' });
    await receiver.waitFor(1);
    let log = await client.listWebhookDeliveries(created.webhook_id, { status: 'delivered' });
    for (let i = 0; log.deliveries.length === 0 && i < 200; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      log = await client.listWebhookDeliveries(created.webhook_id, { status: 'delivered' });
    }
    expect(log.deliveries).toHaveLength(1);
    const retried = await client.retryWebhookDelivery(created.webhook_id, log.deliveries[0]!.delivery_id);
    expect(retried.status).toBe('pending');
    await receiver.waitFor(2);
    expect(await client.deleteWebhook(created.webhook_id)).toEqual({ deleted: true, webhook_id: created.webhook_id });
    const gone = await client.getWebhook(created.webhook_id).catch((e: unknown) => e);
    expect((gone as AcsApiError).code).toBe('not_found');
  });
});
