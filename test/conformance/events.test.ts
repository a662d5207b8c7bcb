/**
 * Contract §9 over the wire, against `acs-server start` with the flags a receiver on loopback
 * needs (`--webhook-allow-private`, a short `--webhook-retry-schedule`): the log, the stream, and
 * a webhook delivery verified with the `standardwebhooks` library as a receiver would.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { expectProblem, expectStatus } from './contract.ts';
import { call, startServer, type Server } from './server.ts';

let server: Server;
const at = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  call(server.baseUrl, method, `/api/v1${path}`, { key: server.apiKey, body, headers });

beforeAll(async () => {
  server = await startServer({ args: ['--webhook-allow-private', '--webhook-retry-schedule', '200ms,200ms'] });
});
afterAll(async () => {
  await server?.stop();
});

describe('§9 events and webhooks', () => {
  it('§9 log: a change has its event, in order, with the resource as data; after walks on; an after beyond the log is invalid_cursor', async () => {
    const team = await at('POST', `/organizations/${server.orgId}/teams`, { team_name: 'conformance-events' });
    expectStatus(team, 201);
    const page = await at('GET', `/organizations/${server.orgId}/events?types=team.*`);
    expectStatus(page, 200);
    const created = page.body.events.find((e: any) => e.data.team_id === team.body.team_id);
    expect(created).toMatchObject({ type: 'team.created', org_id: server.orgId, team_id: team.body.team_id, data: team.body });
    expect(Number.isInteger(created.seq) && created.seq >= 1).toBe(true);
    const onward = await at('GET', `/organizations/${server.orgId}/events?after=${page.body.next_after}`);
    expect(onward.body.events).toEqual([]);
    expectProblem(await at('GET', `/organizations/${server.orgId}/events?after=${page.body.next_after + 10}`), 400, 'invalid_cursor');
  });

  it('§9 stream: text/event-stream with id, event and data; Last-Event-ID resumes after it', async () => {
    const before = (await at('GET', `/organizations/${server.orgId}/events`)).body.next_after;
    const team = await at('POST', `/organizations/${server.orgId}/teams`, { team_name: 'streamed' });
    const response = await fetch(`${server.baseUrl}/api/v1/organizations/${server.orgId}/events/stream`, {
      headers: { 'x-api-key': server.apiKey, 'last-event-id': String(before) },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = response.body!.getReader();
    let text = '';
    while (!/\n\n(id: .*\n)/.test(text) || !text.includes('team.created')) text += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    const frame = /id: (\d+)\nevent: ([a-z.]+)\ndata: (.*)\n/.exec(text)!;
    expect(Number(frame[1])).toBe(before + 1);
    expect(frame[2]).toBe('team.created');
    expect(JSON.parse(frame[3]!)).toMatchObject({ seq: before + 1, type: 'team.created', data: { team_id: team.body.team_id } });
  });

  it('§9 webhooks: a delivery is signed per Standard Webhooks (the library verifies it), retried after a failure with the same webhook-id, and in the delivery log', async () => {
    const received: Array<{ headers: http.IncomingHttpHeaders; body: string }> = [];
    const receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        received.push({ headers: req.headers, body });
        res.writeHead(received.length === 1 ? 503 : 204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
      const hook = await at('POST', `/organizations/${server.orgId}/webhooks`, { url, events: ['team.created'] });
      expectStatus(hook, 201);
      expect(hook.body.secret).toMatch(/^whsec_/);
      expect(hook.body.status).toBe('enabled');
      const team = await at('POST', `/organizations/${server.orgId}/teams`, { team_name: 'hooked' });
      const deadline = Date.now() + 30_000;
      while (received.length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(received).toHaveLength(2);
      expect(received[0]!.headers['webhook-id']).toBe(received[1]!.headers['webhook-id']);
      const event = new Webhook(hook.body.secret).verify(received[1]!.body, received[1]!.headers as Record<string, string>) as any;
      expect(event).toMatchObject({ type: 'team.created', event_id: received[1]!.headers['webhook-id'], data: { team_id: team.body.team_id } });
      let log = await at('GET', `/webhooks/${hook.body.webhook_id}/deliveries`);
      while (log.body.deliveries[0]?.status !== 'delivered' && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        log = await at('GET', `/webhooks/${hook.body.webhook_id}/deliveries`);
      }
      expect(log.body.deliveries[0]).toMatchObject({ event_id: event.event_id, attempt: 2, status: 'delivered', response_status: 204 });
      const retried = await at('POST', `/webhooks/${hook.body.webhook_id}/deliveries/${log.body.deliveries[0].delivery_id}/retry`);
      expectStatus(retried, 202);
      expect(retried.body.status).toBe('pending');
    } finally {
      receiver.closeAllConnections();
      receiver.close();
    }
  });
});
