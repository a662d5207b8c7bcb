import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import type { LookupAddress } from 'node:dns';
import { buildTeam, request, startHarness, type Harness } from './helpers.ts';
import { startReceiver, type Receiver } from '../support/webhook-receiver.ts';

// Contract §9, webhooks: Standard Webhooks signatures, retries, 410, the delivery log, rotation
// and where webhooks may point.

let cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

// One server for the suite (receivers on loopback, a short retry schedule); each test works in an
// organization of its own, whose webhooks see only its own events.
let server: Harness;
// Where the names of the SSRF tests resolve to (the second server's resolver).
const names = new Map<string, string[]>();
let guarded: Harness;
beforeAll(async () => {
  server = await startHarness({ inMemory: true, webhooks: { allowPrivate: true, retrySchedule: [150, 300, 450], pollMs: 500 } });
  const resolve = async (host: string): Promise<LookupAddress[]> => {
    const found = names.get(host);
    if (!found) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  guarded = await startHarness({ inMemory: true, webhooks: { allowPrivate: false, resolve, retrySchedule: [100], pollMs: 500 } });
});
afterAll(async () => {
  await server?.server.close();
  await guarded?.server.close();
});

/** A new organization of `on` (default: the suite's server), with its own key. */
async function harness(on: () => Harness = () => server): Promise<Harness> {
  const base = on();
  const { org_id, api_key } = await base.server.provisionOrganization(`org-${Math.random()}`);
  return { server: base.server, orgId: org_id, apiKey: api_key, call: (method, path, body, headers = {}) => request(base.server.url + path, method, body, { 'x-api-key': api_key, ...headers }) };
}

async function receiver(): Promise<Receiver> {
  const r = await startReceiver();
  cleanup.push(() => r.close());
  return r;
}

const create = (h: Harness, body: Record<string, unknown>) => h.call('POST', `/api/v1/organizations/${h.orgId}/webhooks`, body);

/** Polls the delivery log until `done` holds for it (30 s at most). */
async function deliveriesWhen(h: Harness, webhookId: string, done: (deliveries: any[]) => boolean, query = ''): Promise<any[]> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const list = (await h.call('GET', `/api/v1/webhooks/${webhookId}/deliveries${query}`)).body.deliveries;
    if (done(list)) return list;
    if (Date.now() > deadline) throw new Error(`delivery log never reached the expected state: ${JSON.stringify(list)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Verifies a received request with the `standardwebhooks` library; output: the event, or throws. */
function verify(secret: string, request: { headers: Record<string, unknown>; body: string }): any {
  return new StandardWebhook(secret).verify(request.body, request.headers as Record<string, string>);
}

describe('webhooks', () => {
  it('webhooks: a webhook gets a generated whsec_ secret of 32 bytes, shown once; listing and reading show no secret', async () => {
    const h = await harness();
    const r = await receiver();
    const created = await create(h, { url: r.url, events: ['message.*'], description: 'ops feed' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ url: r.url, events: ['message.*'], description: 'ops feed', status: 'enabled', org_id: h.orgId, disabled_reason: null });
    expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(created.body.secret.slice(6), 'base64')).toHaveLength(32);
    const listed = await h.call('GET', `/api/v1/organizations/${h.orgId}/webhooks`);
    const { secret: _secret, ...withoutSecret } = created.body;
    expect(listed.body.webhooks).toEqual([withoutSecret]);
    const read = await h.call('GET', `/api/v1/webhooks/${created.body.webhook_id}`);
    expect(JSON.stringify(read.body)).not.toContain(created.body.secret);
    // A secret given must be whsec_ and the base64 of 24 to 64 bytes.
    const given = `whsec_${Buffer.alloc(24, 7).toString('base64')}`;
    expect((await create(h, { url: r.url, events: ['team.*'], secret: given })).body.secret).toBe(given);
    for (const secret of ['whsec_short', Buffer.alloc(32).toString('base64'), `whsec_${Buffer.alloc(65).toString('base64')}`]) {
      const refused = await create(h, { url: r.url, events: ['team.*'], secret });
      expect(refused.status, secret).toBe(400);
      expect(refused.body.errors[0].path).toBe('secret');
    }
    // Unknown event types are refused by name.
    const typo = await create(h, { url: r.url, events: ['message.sent'] });
    expect(typo.status).toBe(400);
    expect(typo.body.errors[0].path).toBe('events.0');
  });

  it('deliveries: each matching event is POSTed once, signed so that the standardwebhooks library verifies it, with the event as body', async () => {
    const h = await harness();
    const r = await receiver();
    const hook = (await create(h, { url: r.url, events: ['message.created', 'edge.*'] })).body;
    const ids = await buildTeam(h);
    await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'hello' });
    const got = await r.waitFor(2);
    const log = (await h.call('GET', `/api/v1/organizations/${h.orgId}/events?types=message.created,edge.*`)).body.events;
    expect(got.map((g) => g.event.type).sort()).toEqual(['edge.created', 'message.created']);
    for (const request of got) {
      const event = verify(hook.secret, request);
      expect(event).toEqual(log.find((e: any) => e.event_id === event.event_id));
      expect(request.headers['webhook-id']).toBe(event.event_id);
      expect(request.headers['content-type']).toBe('application/json');
      // Another secret does not verify it.
      expect(() => verify(`whsec_${Buffer.alloc(32, 1).toString('base64')}`, request)).toThrow(/No matching signature/);
    }
    const deliveries = await deliveriesWhen(h, hook.webhook_id, (list) => list.length === 2 && list.every((d) => d.status === 'delivered'));
    expect(deliveries[0]).toMatchObject({ attempt: 1, response_status: 200, error: null, next_attempt_at: null, webhook_id: hook.webhook_id });
    expect(deliveries.map((d) => d.seq)).toEqual([...deliveries.map((d) => d.seq)].sort((a, b) => b - a));
    // Nothing else was sent (team, agent, human and thread events do not match).
    expect(r.received).toHaveLength(2);
  });

  it('retries: a receiver that fails and then recovers gets the same webhook-id again after the schedule\'s delays, and the log shows the attempts', async () => {
    const h = await harness();
    const r = await receiver();
    r.answer((_request, index) => ({ status: index === 0 ? 500 : index === 1 ? 502 : 204 }));
    const hook = (await create(h, { url: r.url, events: ['team.created'] })).body;
    await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'retried' });
    const got = await r.waitFor(3);
    expect(new Set(got.map((g) => g.headers['webhook-id'])).size).toBe(1);
    for (const request of got) expect(verify(hook.secret, request).type).toBe('team.created');
    // Each attempt is signed at its own time, the first delay is at least the schedule's first.
    expect(got[1]!.at - got[0]!.at).toBeGreaterThanOrEqual(150 - 20);
    const [delivery] = await deliveriesWhen(h, hook.webhook_id, (list) => list[0]?.status === 'delivered');
    expect(delivery).toMatchObject({ attempt: 3, status: 'delivered', response_status: 204, error: null });
    // Each attempt with its own answer, error and duration, oldest first: why the first two failed.
    expect(delivery.attempts).toEqual([
      { attempt: 1, status: 'pending', response_status: 500, error: 'the receiver answered 500', duration_ms: expect.any(Number), next_attempt_at: expect.any(String), created_at: expect.any(String) },
      { attempt: 2, status: 'pending', response_status: 502, error: 'the receiver answered 502', duration_ms: expect.any(Number), next_attempt_at: expect.any(String), created_at: expect.any(String) },
      { attempt: 3, status: 'delivered', response_status: 204, error: null, duration_ms: expect.any(Number), next_attempt_at: null, created_at: expect.any(String) },
    ]);
    // An attempt's next_attempt_at is when the one after it was due: after the attempt began.
    const [first, second, third] = delivery.attempts;
    expect(Date.parse(first.next_attempt_at)).toBeGreaterThan(Date.parse(first.created_at));
    expect(Date.parse(second.created_at)).toBeGreaterThanOrEqual(Date.parse(first.created_at));
    expect(Date.parse(third.created_at)).toBeGreaterThanOrEqual(Date.parse(second.created_at));
  });

  it('retries: after the last retry the delivery is failed; the retry route sends it again once (202)', async () => {
    const h = await harness();
    const r = await receiver();
    r.answer(() => ({ status: 500 }));
    const hook = (await create(h, { url: r.url, events: ['team.created'] })).body;
    await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'doomed' });
    const [failed] = await deliveriesWhen(h, hook.webhook_id, (list) => list[0]?.status === 'failed');
    expect(failed).toMatchObject({ attempt: 4, response_status: 500, error: 'the receiver answered 500', next_attempt_at: null });
    expect((await h.call('GET', `/api/v1/webhooks/${hook.webhook_id}/deliveries?status=failed`)).body.deliveries).toHaveLength(1);
    expect((await h.call('GET', `/api/v1/webhooks/${hook.webhook_id}/deliveries?status=delivered`)).body.deliveries).toHaveLength(0);
    r.answer(() => ({ status: 200 }));
    const retried = await h.call('POST', `/api/v1/webhooks/${hook.webhook_id}/deliveries/${failed.delivery_id}/retry`);
    expect(retried.status).toBe(202);
    expect(retried.body).toMatchObject({ delivery_id: failed.delivery_id, status: 'pending' });
    // The retry's answer lists the four attempts made: three retried, the last one failed.
    expect(retried.body.attempts.map((a: any) => [a.attempt, a.status, a.response_status])).toEqual([
      [1, 'pending', 500],
      [2, 'pending', 500],
      [3, 'pending', 500],
      [4, 'failed', 500],
    ]);
    const [done] = await deliveriesWhen(h, hook.webhook_id, (list) => list[0]?.status === 'delivered');
    expect(done.attempt).toBe(5);
    expect(done.attempts.map((a: any) => [a.attempt, a.status, a.response_status, a.error])).toEqual([
      [1, 'pending', 500, 'the receiver answered 500'],
      [2, 'pending', 500, 'the receiver answered 500'],
      [3, 'pending', 500, 'the receiver answered 500'],
      [4, 'failed', 500, 'the receiver answered 500'],
      [5, 'delivered', 200, null],
    ]);
    expect(new Set(r.received.map((g) => g.headers['webhook-id']))).toEqual(new Set([failed.event_id]));
    const unknown = await h.call('POST', `/api/v1/webhooks/${hook.webhook_id}/deliveries/${hook.webhook_id}/retry`);
    expect(unknown.status).toBe(404);
  });

  it('retries: a Retry-After on 429 longer than the schedule\'s delay moves the next attempt back to it', async () => {
    const h = await harness();
    const r = await receiver();
    r.answer((_request, index) => (index === 0 ? { status: 429, headers: { 'retry-after': '3' } } : { status: 200 }));
    const hook = (await create(h, { url: r.url, events: ['team.created'] })).body;
    await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'slow down' });
    const [pending] = await deliveriesWhen(h, hook.webhook_id, (list) => list[0]?.attempt === 1 && list[0]?.status === 'pending' && list[0]?.response_status === 429);
    // Scheduled by the receiver's 3 s, not the schedule's 150 ms (times as the server recorded them).
    expect(Date.parse(pending.next_attempt_at) - Date.parse(pending.updated_at)).toBeGreaterThanOrEqual(2_900);
    const [done] = await deliveriesWhen(h, hook.webhook_id, (list) => list[0]?.status === 'delivered');
    expect(done.attempt).toBe(2);
  });

  it('410: a receiver answering 410 Gone disables the webhook, which then gets nothing until it is enabled again', async () => {
    const h = await harness();
    const r = await receiver();
    r.answer(() => ({ status: 410 }));
    const hook = (await create(h, { url: r.url, events: ['team.*'] })).body;
    await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'gone' });
    const [delivery] = await deliveriesWhen(h, hook.webhook_id, (list) => list[0]?.status === 'failed');
    expect(delivery).toMatchObject({ attempt: 1, response_status: 410 });
    const disabled = (await h.call('GET', `/api/v1/webhooks/${hook.webhook_id}`)).body;
    expect(disabled).toMatchObject({ status: 'disabled', disabled_reason: 'the receiver answered 410 Gone' });
    r.answer(() => ({ status: 200 }));
    await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'while disabled' });
    const enabled = await h.call('PATCH', `/api/v1/webhooks/${hook.webhook_id}`, { status: 'enabled' });
    expect(enabled.body).toMatchObject({ status: 'enabled', disabled_reason: null });
    await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'after' });
    const got = await r.waitFor(2);
    // The event written while disabled is skipped; the one after is delivered.
    expect(got.map((g) => g.event.data.team_name)).toEqual(['gone', 'after']);
  });

  it('rotate-secret: during the grace both secrets sign (either verifies); with grace 0 only the new one', async () => {
    const h = await harness();
    const r = await receiver();
    const hook = (await create(h, { url: r.url, events: ['team.created'] })).body;
    const rotated = await h.call('POST', `/api/v1/webhooks/${hook.webhook_id}/rotate-secret`, { grace_seconds: 3600 });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(hook.secret);
    expect(Date.parse(rotated.body.previous_secret_expires_at)).toBeGreaterThan(Date.now() + 3_000_000);
    await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'during grace' });
    const [during] = await r.waitFor(1);
    expect(String(during!.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verify(hook.secret, during!).type).toBe('team.created');
    expect(verify(rotated.body.secret, during!).type).toBe('team.created');
    const given = `whsec_${Buffer.alloc(40, 9).toString('base64')}`;
    const again = await h.call('POST', `/api/v1/webhooks/${hook.webhook_id}/rotate-secret`, { secret: given, grace_seconds: 0 });
    expect(again.body).toMatchObject({ secret: given, previous_secret_expires_at: null });
    await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'after grace' });
    const [, after] = await r.waitFor(2);
    expect(String(after!.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(verify(given, after!).data.team_name).toBe('after grace');
    expect(() => verify(rotated.body.secret, after!)).toThrow();
  });

  it('webhooks: PATCH changes events and url (checked again), DELETE removes the webhook and its log; another organization sees none of it', async () => {
    const h = await harness(() => guarded);
    const created = await create(h, { url: 'https://203.0.114.9/hook', events: ['team.*'] });
    expect(created.status).toBe(201);
    const id = created.body.webhook_id;
    const patched = await h.call('PATCH', `/api/v1/webhooks/${id}`, { events: ['message.created'], description: 'x' });
    expect(patched.body).toMatchObject({ events: ['message.created'], description: 'x', url: 'https://203.0.114.9/hook' });
    const refused = await h.call('PATCH', `/api/v1/webhooks/${id}`, { url: 'https://127.0.0.1/hook' });
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe('webhook_url_refused');
    const other = await h.server.provisionOrganization(`other-${Math.random()}`);
    for (const [method, path] of [
      ['GET', `/api/v1/webhooks/${id}`],
      ['PATCH', `/api/v1/webhooks/${id}`],
      ['DELETE', `/api/v1/webhooks/${id}`],
      ['GET', `/api/v1/webhooks/${id}/deliveries`],
      ['GET', `/api/v1/organizations/${h.orgId}/webhooks`],
    ] as const) {
      const reply = await h.call(method, path, method === 'PATCH' ? { description: 'y' } : undefined, { 'x-api-key': other.api_key });
      expect(reply.status, `${method} ${path}`).toBe(404);
    }
    expect((await h.call('DELETE', `/api/v1/webhooks/${id}`)).body).toEqual({ deleted: true, webhook_id: id });
    expect((await h.call('GET', `/api/v1/webhooks/${id}`)).status).toBe(404);
  });

  it('webhooks: a name is unique in the organization (409 conflict with existing_id at creation and rename), null when none is given', async () => {
    const h = await harness();
    const r = await receiver();
    const unnamed = await create(h, { url: r.url, events: ['message.created'] });
    expect(unnamed.body.name).toBeNull();
    const named = await create(h, { name: 'ops-feed', url: r.url, events: ['message.created'], status: 'disabled' });
    expect(named.status).toBe(201);
    expect(named.body).toMatchObject({ name: 'ops-feed', status: 'disabled' });
    const again = await create(h, { name: 'ops-feed', url: r.url, events: ['thread.opened'] });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: 'conflict', existing_id: named.body.webhook_id });
    const renamed = await h.call('PATCH', `/api/v1/webhooks/${unnamed.body.webhook_id}`, { name: 'ops-feed' });
    expect(renamed.status).toBe(409);
    expect(renamed.body.existing_id).toBe(named.body.webhook_id);
    const ok = await h.call('PATCH', `/api/v1/webhooks/${unnamed.body.webhook_id}`, { name: 'audit' });
    expect(ok.body).toMatchObject({ name: 'audit', url: r.url });
    // The same name in another organization is another webhook's business.
    const other = await harness();
    expect((await create(other, { name: 'ops-feed', url: r.url, events: ['message.created'] })).status).toBe(201);
  });

  it('webhooks: secret_fingerprint tells whether a candidate secret is the webhook\'s, without showing it, and follows a rotation', async () => {
    const { fingerprintMatches } = await import('../../api/webhook-fingerprint.ts');
    const h = await harness();
    const r = await receiver();
    const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const created = await create(h, { name: 'fp', url: r.url, events: ['message.created'], secret });
    const read = (await h.call('GET', `/api/v1/webhooks/${created.body.webhook_id}`)).body;
    expect(read.secret_fingerprint).toBe(created.body.secret_fingerprint);
    expect(read.secret_fingerprint).toMatch(/^hmac-sha256:[A-Za-z0-9_-]{22}:[A-Za-z0-9_-]{43}$/);
    expect(read.secret_fingerprint).not.toContain(secret.slice(6, 20));
    expect(fingerprintMatches(read.secret_fingerprint, secret)).toBe(true);
    expect(fingerprintMatches(read.secret_fingerprint, `whsec_${Buffer.alloc(32, 8).toString('base64')}`)).toBe(false);
    const rotated = (await h.call('POST', `/api/v1/webhooks/${created.body.webhook_id}/rotate-secret`, { grace_seconds: 0 })).body;
    const after = (await h.call('GET', `/api/v1/webhooks/${created.body.webhook_id}`)).body;
    expect(fingerprintMatches(after.secret_fingerprint, rotated.secret)).toBe(true);
    expect(fingerprintMatches(after.secret_fingerprint, secret)).toBe(false);
    // Two webhooks with one secret do not show one fingerprint (a salt per secret).
    const twin = await create(h, { url: r.url, events: ['message.created'], secret });
    expect(twin.body.secret_fingerprint).not.toBe(created.body.secret_fingerprint);
  });

  it('webhooks: a webhook stored before fingerprints were (none in its row) gets one made from its secret when read', async () => {
    const { fingerprintMatches } = await import('../../api/webhook-fingerprint.ts');
    const { startHarnessWithDb } = await import('./helpers.ts');
    const own = await startHarnessWithDb('legacy', { options: { inMemory: true, webhooks: { allowPrivate: true } } });
    try {
      const r = await receiver();
      const created = await own.call('POST', `/api/v1/organizations/${own.orgId}/webhooks`, { url: r.url, events: ['message.created'] });
      await own.db.query(`UPDATE webhooks SET secret_fingerprint = NULL WHERE id = $1`, [created.body.webhook_id]);
      const read = (await own.call('GET', `/api/v1/webhooks/${created.body.webhook_id}`)).body;
      expect(fingerprintMatches(read.secret_fingerprint, created.body.secret)).toBe(true);
    } finally {
      await own.server.close();
    }
  });

  it('delivery log: an attempt whose process stopped before recording it (its lease ran out), or that a retry by hand replaced, is listed as such, and the next attempt as it went', async () => {
    const { startHarnessWithDb } = await import('./helpers.ts');
    const own = await startHarnessWithDb('abandoned', { options: { inMemory: true, webhooks: { allowPrivate: true, retrySchedule: [100], pollMs: 200 } } });
    try {
      const r = await receiver();
      const hook = (await own.call('POST', `/api/v1/organizations/${own.orgId}/webhooks`, { url: r.url, events: ['team.created'] })).body;
      await own.call('POST', `/api/v1/organizations/${own.orgId}/teams`, { team_name: 'abandoned' });
      const [delivered] = await deliveriesWhen(own, hook.webhook_id, (list) => list[0]?.status === 'delivered');
      // Another process claimed a second attempt and died before recording it: its lease ends now.
      await own.db.query(
        `UPDATE webhook_deliveries SET status = 'pending', attempt = attempt + 1, lease_token = gen_random_uuid(), next_attempt_at = now(), updated_at = now() WHERE id = $1`,
        [delivered.delivery_id],
      );
      const [done] = await deliveriesWhen(own, hook.webhook_id, (list) => list[0]?.status === 'delivered' && list[0]?.attempt === 3);
      expect(done.attempts.map((a: any) => [a.attempt, a.status, a.response_status, a.error])).toEqual([
        [1, 'delivered', 200, null],
        [2, 'pending', null, 'no outcome recorded: the process making this attempt stopped before it ended (its lease ran out); attempted again'],
        [3, 'delivered', 200, null],
      ]);
      // An attempt in flight (leased for the next hour) when a retry is asked for by hand is not recorded by its process: listed as replaced.
      await own.db.query(
        `UPDATE webhook_deliveries SET status = 'pending', attempt = attempt + 1, lease_token = gen_random_uuid(), next_attempt_at = now() + interval '1 hour', updated_at = now() WHERE id = $1`,
        [delivered.delivery_id],
      );
      const retried = await own.call('POST', `/api/v1/webhooks/${hook.webhook_id}/deliveries/${delivered.delivery_id}/retry`);
      expect(retried.body.attempts.at(-1)).toMatchObject({ attempt: 4, status: 'pending', response_status: null, error: 'no outcome recorded: a retry asked for by hand replaced this attempt while it was in flight' });
      const [again] = await deliveriesWhen(own, hook.webhook_id, (list) => list[0]?.status === 'delivered' && list[0]?.attempt === 5);
      expect(again.attempts.map((a: any) => [a.attempt, a.status])).toEqual([[1, 'delivered'], [2, 'pending'], [3, 'delivered'], [4, 'pending'], [5, 'delivered']]);
    } finally {
      await own.server.close();
    }
  });

  it('delivery log: migration 0024 lists the latest attempt of each delivery made before attempts were recorded', async () => {
    const { startHarnessWithDb } = await import('./helpers.ts');
    const { migrate } = await import('../../service/storage/migrations.ts');
    const own = await startHarnessWithDb('before-attempts', { options: { inMemory: true, webhooks: { allowPrivate: true, retrySchedule: [100, 100], pollMs: 200 } } });
    try {
      const r = await receiver();
      r.answer(() => ({ status: 500 }));
      const hook = (await own.call('POST', `/api/v1/organizations/${own.orgId}/webhooks`, { url: r.url, events: ['team.created'] })).body;
      await own.call('POST', `/api/v1/organizations/${own.orgId}/teams`, { team_name: 'before' });
      await deliveriesWhen(own, hook.webhook_id, (list) => list[0]?.status === 'failed');
      // As the database was before the attempts were kept: the delivery row alone.
      await own.db.query(`DROP TABLE webhook_delivery_attempts`);
      await own.db.query(`DELETE FROM schema_migrations WHERE id = '0024_webhook_delivery_attempts'`);
      await migrate(own.db);
      const [failed] = (await own.call('GET', `/api/v1/webhooks/${hook.webhook_id}/deliveries`)).body.deliveries;
      expect(failed).toMatchObject({ attempt: 3, status: 'failed' });
      expect(failed.attempts).toEqual([
        { attempt: 3, status: 'failed', response_status: 500, error: 'the receiver answered 500', duration_ms: expect.any(Number), next_attempt_at: null, created_at: expect.any(String) },
      ]);
      // It began its duration before it was recorded.
      expect(Math.abs(Date.parse(failed.updated_at) - Date.parse(failed.attempts[0].created_at) - failed.duration_ms)).toBeLessThanOrEqual(1);
    } finally {
      await own.server.close();
    }
  });

  it('webhooks: an organization holds at most 20 webhooks (409 webhook_limit)', async () => {
    const h = await harness();
    for (let i = 0; i < 20; i += 1) expect((await create(h, { url: `http://127.0.0.1:9/${i}`, events: ['team.*'] })).status).toBe(201);
    const over = await create(h, { url: 'http://127.0.0.1:9/21', events: ['team.*'] });
    expect(over.status).toBe(409);
    expect(over.body).toMatchObject({ code: 'webhook_limit', limit: 20 });
  });
});

describe('where webhooks may point', () => {
  it('ssrf: URLs that are not https, carry credentials, or reach loopback, private, link-local, reserved or IPv4-compatible addresses are refused at creation (400 webhook_url_refused)', async () => {
    names.set('localhost', ['127.0.0.1']);
    names.set('intranet.example', ['10.1.2.3']);
    names.set('mixed.example', ['93.184.215.14', '192.168.1.1']);
    names.set('public.example', ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c']);
    const h = await harness(() => guarded);
    for (const url of [
      'http://93.184.215.14/hook',
      'https://user:pass@public.example/hook',
      'https://127.0.0.1/hook',
      'https://[::1]/hook',
      'https://[::ffff:127.0.0.1]/hook',
      // IPv4-compatible (::/96, deprecated) and outside the global unicast space (contract §14).
      'https://[::127.0.0.1]/hook',
      'https://[::7f00:1]/hook',
      'https://[4000::1]/hook',
      'https://10.0.0.1/hook',
      'https://172.16.5.4/hook',
      'https://192.168.0.10/hook',
      'https://169.254.169.254/latest/meta-data',
      'https://100.64.0.1/hook',
      'https://0.0.0.0/hook',
      'https://[fd00::1]/hook',
      'https://[fe80::1]/hook',
      'https://192.0.2.1/hook',
      'https://localhost/hook',
      'https://intranet.example/hook',
      'https://mixed.example/hook',
      'https://nowhere.example/hook',
    ]) {
      const refused = await create(h, { url, events: ['team.*'] });
      expect(refused.status, url).toBe(400);
      expect(refused.body.code, url).toBe('webhook_url_refused');
      expect(refused.body.errors[0].path, url).toBe('url');
    }
    for (const url of ['https://public.example/hook', 'https://93.184.215.14/hook', 'https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/x']) {
      expect((await create(h, { url, events: ['team.*'] })).status, url).toBe(201);
    }
  });

  it('ssrf: a name that resolves to a public address at creation and to loopback at delivery is refused at delivery: nothing reaches the receiver', async () => {
    names.set('rebinding.example', ['93.184.215.14']);
    const h = await harness(() => guarded);
    const r = await receiver();
    const hook = (await create(h, { url: `https://rebinding.example:${r.port}/hook`, events: ['team.created'] })).body;
    names.set('rebinding.example', ['127.0.0.1']);
    await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'rebound' });
    const [failed] = await deliveriesWhen(h, hook.webhook_id, (list) => list[0]?.status === 'failed');
    expect(failed.error).toMatch(/webhook_url_refused: rebinding\.example resolves to 127\.0\.0\.1, a loopback address/);
    expect(failed.attempt).toBe(2);
    expect(r.received).toHaveLength(0);
  });
});
