import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Attachment } from '../../api/schemas.ts';
import { buildTeam, request, startHarness, type Harness } from './helpers.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.server.close();
});

const upload = (body: Record<string, unknown>, headers: Record<string, string> = {}) => h.call('POST', '/api/v1/attachments', body, headers);

async function openThread(ids: Awaited<ReturnType<typeof buildTeam>>): Promise<string> {
  const thread = await h.call('POST', `/api/v1/edges/${ids.edgeId}/threads`, { sender_agent_id: ids.humanId, content: 'hi' });
  return thread.body.thread_id as string;
}

describe('attachments', () => {
  it('attachments: an upload returns 201 with its metadata and GET returns the same', async () => {
    const data = Buffer.from('hello, attachments');
    const created = await upload({ filename: 'notes.txt', content_type: 'text/plain; charset=utf-8', data_base64: data.toString('base64') });
    expect(created.status).toBe(201);
    const attachment = Attachment.parse(created.body);
    expect(attachment).toMatchObject({ filename: 'notes.txt', content_type: 'text/plain; charset=utf-8', size_bytes: data.length, org_id: h.orgId });
    expect(attachment.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const read = await h.call('GET', `/api/v1/attachments/${attachment.attachment_id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(created.body);
  });

  it('attachments: the content route returns the identical bytes with their type, length and safe disposition', async () => {
    const data = randomBytes(100_000);
    const created = await upload({ filename: 'ré"po\\rt.bin', content_type: 'application/octet-stream', data_base64: data.toString('base64') });
    expect(created.status).toBe(201);
    const response = await fetch(`${h.server.url}/v1/attachments/${created.body.attachment_id}/content`, { headers: { 'x-api-key': h.apiKey } });
    expect(response.status).toBe(200);
    expect(Buffer.from(await response.arrayBuffer()).equals(data)).toBe(true);
    expect(response.headers.get('content-type')).toBe('application/octet-stream');
    expect(response.headers.get('content-length')).toBe(String(data.length));
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('content-disposition')).toBe(`attachment; filename="r__po_rt.bin"; filename*=UTF-8''r%C3%A9%22po%5Crt.bin`);
  });

  it('attachments: a file of exactly 5 MiB is accepted and one byte more is 413 payload_too_large', async () => {
    const fiveMiB = Buffer.alloc(5 * 1024 * 1024, 7);
    const ok = await upload({ filename: 'max.bin', content_type: 'application/octet-stream', data_base64: fiveMiB.toString('base64') });
    expect(ok.status).toBe(201);
    expect(ok.body.size_bytes).toBe(fiveMiB.length);
    const over = await upload({ filename: 'over.bin', content_type: 'application/octet-stream', data_base64: Buffer.alloc(fiveMiB.length + 1, 7).toString('base64') });
    expect(over.status).toBe(413);
    expect(over.body).toMatchObject({ code: 'payload_too_large', errors: [{ path: 'data_base64' }] });
  });

  it('attachments: a body over 8 MiB is 413 payload_too_large, and other routes keep the 1 MiB limit', async () => {
    const big = JSON.stringify({ filename: 'x', content_type: 'text/plain', data_base64: 'A'.repeat(8 * 1024 * 1024) });
    const response = await upload(big as unknown as Record<string, unknown>);
    expect(response.status).toBe(413);
    expect(response.body.code).toBe('payload_too_large');
    const team = await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'big', description: 'x'.repeat(2 * 1024 * 1024) });
    expect(team.status).toBe(413);
  });

  it('attachments: bad base64, a bad MIME type, an empty filename and unknown fields are 400 invalid_request', async () => {
    const bad = await upload({ filename: ' ', content_type: 'text', data_base64: 'abc', extra: 1 });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('invalid_request');
    expect(bad.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['content_type', 'data_base64', 'extra', 'filename']);
    const notBase64 = await upload({ filename: 'a', content_type: 'text/plain', data_base64: 'ab$=' });
    expect(notBase64.status).toBe(400);
    const controlCharacters = await upload({ filename: 'a\r\nb', content_type: 'text/plain', data_base64: 'YQ==' });
    expect(controlCharacters.body.errors).toEqual([{ path: 'filename', message: 'must not contain control characters' }]);
  });

  it("attachments: another organization's attachment is 404 not_found on both GET routes", async () => {
    const other = await h.server.provisionOrganization('other-attachments');
    const theirs = await request(`${h.server.url}/api/v1/attachments`, 'POST', { filename: 'a', content_type: 'text/plain', data_base64: 'YQ==' }, { 'x-api-key': other.api_key });
    expect(theirs.status).toBe(201);
    for (const path of ['', '/content']) {
      const read = await h.call('GET', `/api/v1/attachments/${theirs.body.attachment_id}${path}`);
      expect(read.status).toBe(404);
      expect(read.body.code).toBe('not_found');
    }
    expect((await h.call('GET', '/api/v1/attachments/not-a-uuid')).status).toBe(404);
  });

  it('messages: attachments of the thread\'s organization are stored and listed with the message', async () => {
    const ids = await buildTeam(h);
    const threadId = await openThread(ids);
    const a = await upload({ filename: 'a.txt', content_type: 'text/plain', data_base64: 'YQ==' });
    const b = await upload({ filename: 'b.txt', content_type: 'text/plain', data_base64: 'Yg==' });
    const attachments = [a.body.attachment_id, b.body.attachment_id];
    const message = await h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: ids.agentId, content: 'files', attachments });
    expect(message.status).toBe(201);
    expect(message.body.attachments).toEqual(attachments);
    const page = await h.call('GET', `/api/v1/threads/${threadId}`);
    expect(page.body.messages.at(-1)).toMatchObject({ message_id: message.body.message_id, attachments });
  });

  it('messages: an unknown attachment id or one of another organization is 422 unknown_reference and writes nothing', async () => {
    const ids = await buildTeam(h);
    const threadId = await openThread(ids);
    const other = await h.server.provisionOrganization('other-messages');
    const theirs = await request(`${h.server.url}/api/v1/attachments`, 'POST', { filename: 'a', content_type: 'text/plain', data_base64: 'YQ==' }, { 'x-api-key': other.api_key });
    const mine = await upload({ filename: 'a.txt', content_type: 'text/plain', data_base64: 'YQ==' });
    const unknown = '00000000-0000-4000-8000-000000000000';
    const response = await h.call('POST', `/api/v1/threads/${threadId}/messages`, {
      sender_agent_id: ids.agentId,
      content: 'x',
      attachments: [mine.body.attachment_id, theirs.body.attachment_id, unknown],
    });
    expect(response.status).toBe(422);
    expect(response.body.code).toBe('unknown_reference');
    expect(response.body.errors.map((e: { path: string }) => e.path)).toEqual(['attachments.1', 'attachments.2']);
    expect((await h.call('GET', `/api/v1/threads/${threadId}`)).body.message_count).toBe(1);
  });

  it('attachments: org_id uploads into an organization the key provisioned, whose threads may then use it', async () => {
    const child = await h.call('POST', '/api/v1/organizations', { org_name: 'child-with-files' });
    const created = await upload({ filename: 'c.txt', content_type: 'text/plain', data_base64: 'Yw==', org_id: child.body.org_id });
    expect(created.status).toBe(201);
    expect(created.body.org_id).toBe(child.body.org_id);
    const stranger = await h.server.provisionOrganization('stranger');
    const refused = await upload({ filename: 'c.txt', content_type: 'text/plain', data_base64: 'Yw==', org_id: stranger.org_id });
    expect(refused.status).toBe(404);
  });

  it('teams: deleting a team removes the attachments only its messages name, as its preview counts', async () => {
    const ids = await buildTeam(h);
    const threadId = await openThread(ids);
    const own = await upload({ filename: 'own.txt', content_type: 'text/plain', data_base64: 'YQ==' });
    const shared = await upload({ filename: 'shared.txt', content_type: 'text/plain', data_base64: 'Yg==' });
    const loose = await upload({ filename: 'loose.txt', content_type: 'text/plain', data_base64: 'Yw==' });
    const attachments = [own.body.attachment_id, shared.body.attachment_id];
    await h.call('POST', `/api/v1/threads/${threadId}/messages`, { sender_agent_id: ids.agentId, content: 'both', attachments });
    const other = await buildTeam(h);
    const otherThread = await openThread(other);
    await h.call('POST', `/api/v1/threads/${otherThread}/messages`, { sender_agent_id: other.agentId, content: 'shared', attachments: [shared.body.attachment_id] });
    const preview = await h.call('GET', `/api/v1/teams/${ids.teamId}/deletion-preview`);
    expect(preview.body).toMatchObject({ messages: 2, attachments: 1 });
    expect((await h.call('DELETE', `/api/v1/teams/${ids.teamId}`)).status).toBe(200);
    expect((await h.call('GET', `/api/v1/attachments/${own.body.attachment_id}`)).status).toBe(404);
    expect((await h.call('GET', `/api/v1/attachments/${shared.body.attachment_id}`)).status).toBe(200);
    expect((await h.call('GET', `/api/v1/attachments/${loose.body.attachment_id}`)).status).toBe(200);
  });
});
