import type { FastifyInstance } from 'fastify';
import { attachmentBodyLimitBytes, CreateAttachmentBody } from '../../../api/schemas.ts';
import { createAttachment, getAttachment, getAttachmentContent } from '../../domain/attachments.ts';
import { callerOf } from '../auth.ts';
import { parseInput } from '../validate.ts';
import type { Params, RouteContext } from './context.ts';

/**
 * A `Content-Disposition: attachment` value for `filename` (RFC 6266): a plain-ASCII fallback
 * with quotes, backslashes and anything outside printable ASCII replaced by `_`, plus the exact
 * name percent-encoded as UTF-8 in `filename*` (RFC 8187), so no name can break the header.
 */
export function contentDisposition(filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  const encoded = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}

/**
 * The Content-Type to serve stored content under: the type given at upload, or
 * `application/octet-stream` when it cannot be a header value (uploads validated before the
 * content type pattern allowed only header-safe characters), rather than failing with a 500.
 */
export function servableContentType(stored: string): string {
  return /^[\t\x20-\x7e]+$/.test(stored) ? stored : 'application/octet-stream';
}

/**
 * Attachment routes (contract §5): `POST /attachments` (`filename`, `content_type`,
 * `data_base64`, optional `org_id`; body limit 8 MiB) → 201 Attachment; `GET /attachments/{id}`
 * → 200 Attachment; `GET /attachments/{id}/content` → 200 the bytes with their Content-Type
 * ({@link servableContentType}), `Content-Length`, `Content-Disposition: attachment` and
 * `X-Content-Type-Options: nosniff`.
 * Errors: `invalid_request` (bad body), `payload_too_large` (body over 8 MiB, data over 5 MiB
 * decoded), `not_found` (unknown id, or an organization out of the key's reach).
 */
export function attachmentRoutes(app: FastifyInstance, { deps }: RouteContext): void {
  app.post('/attachments', { bodyLimit: attachmentBodyLimitBytes }, async (request, reply) => {
    const body = parseInput(CreateAttachmentBody, request.body);
    return reply.code(201).send(await createAttachment(deps, callerOf(request), body));
  });
  app.get<Params<'attachment_id'>>('/attachments/:attachment_id', async (request) =>
    getAttachment(deps.db, callerOf(request), request.params.attachment_id),
  );
  app.get<Params<'attachment_id'>>('/attachments/:attachment_id/content', async (request, reply) => {
    const { attachment, data } = await getAttachmentContent(deps.db, callerOf(request), request.params.attachment_id);
    // Stored content types come from clients: never let a browser sniff or render them in place.
    return reply
      .header('content-type', servableContentType(attachment.content_type))
      .header('content-length', String(data.length))
      .header('content-disposition', contentDisposition(attachment.filename))
      .header('x-content-type-options', 'nosniff')
      .header('content-security-policy', "default-src 'none'; sandbox")
      .send(data);
  });
}
