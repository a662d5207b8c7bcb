/**
 * A remote A2A agent's parts as the service keeps them (contract §12, "A2A participants": the
 * service records its messages and artifacts on the task and thread): text and data as they are,
 * and files as attachments of the organization, as parts `{file: {name, media_type,
 * attachment_id}}` of the task and attachments of the thread's message.
 *
 * - **Bytes** (`raw`): kept when at most 5 MiB (an attachment's limit, contract §5); a larger file
 *   is named in a text part, not kept.
 * - **By URL** (`url`): fetched under the rules of the remote agent's own URL (those of remote MCP
 *   servers, §11, §9: https and public addresses only unless `--webhook-allow-private`; checked
 *   before the request and at the connection, so a name that resolves elsewhere by then reaches
 *   nothing inside; no redirect followed), http(s) only, at most 5 MiB (read no further), within
 *   {@link fileTimeoutMs} each and the exchange's own time for files ({@link FileLimits}: 30 s for
 *   all of them, apart from the exchange's call timeout, so files never fail the exchange). The remote's headers go only to its own origin (its own file server);
 *   a URL of any other origin is fetched without them, so a file URL never carries the remote's
 *   secrets elsewhere. A file that cannot be fetched so (refused, too large, an error, too slow)
 *   is named with its URL and why in a text part, and the exchange goes on: a file never fails or
 *   holds up the remote's answer.
 * - **Memory**: one step of the answer keeps at most `stepBytes` (25 MiB) of files ({@link FileBudget});
 *   past them a file is named, not kept.
 *
 * Why fetch at all: a URL handed back by a remote is often short-lived (a signed link), and a
 * person or agent reading the thread later could not follow it (it may need the remote's
 * headers). Fetching it is as safe as the requests to the remote itself: the same guard.
 *
 * The other way, our message's attachments go to the remote as their bytes (`raw` file parts with
 * their names and media types, {@link attachmentParts}): an attachment's URL needs a key of ours.
 * At most 20 MiB of them per message; one past that is named in a text part, not sent.
 */
import type { Part as A2aPart } from '@a2a-js/sdk';
import { CreateAttachmentBody, maxAttachmentBytes } from '../../api/schemas.ts';
import { maxTaskParts, type TaskPart } from '../../api/tasks.ts';
import type { UrlPolicy } from '../outbound/url-guard.ts';
import type { Queryable } from '../storage/db.ts';
import { newId } from '../domain/ids.ts';
import { remoteErrorText, remoteFetch, type RemoteAgent } from './remote-client.ts';
import type { PendingFile } from './remote-record.ts';

/** The longest a file by URL is fetched for, in milliseconds. */
export const fileTimeoutMs = 30_000;

/**
 * The bounds on the files of a remote's answer and of our messages (contract §12, "A2A
 * participants"; docs/a2a.md "Limits"). Times in milliseconds, sizes in bytes.
 */
export interface FileLimits {
  /** The longest one file by URL is fetched for (default {@link fileTimeoutMs}). */
  fileTimeoutMs: number;
  /** The longest all the files of one exchange (one attempt: a send or resumption and its answer) are fetched for together (default 30 s). */
  filesTimeoutMs: number;
  /** The bytes of files one exchange step (one event of the remote's answer, recorded with its files) keeps (default 25 MiB): past them a file is named, not kept. */
  stepBytes: number;
  /** The bytes of attachments one message sends the remote (default 20 MiB): past them an attachment is named in a text part, not sent. */
  messageBytes: number;
}

/** The limits the service runs with (see {@link FileLimits}). */
export const defaultFileLimits: FileLimits = { fileTimeoutMs, filesTimeoutMs: 30_000, stepBytes: 25 * 1024 * 1024, messageBytes: 20 * 1024 * 1024 };

/**
 * What the files of one exchange step may still take: a deadline for all of them and the bytes
 * still to keep. Shared by every read of the step ({@link readRemoteParts}), so that many slow or
 * large files never hold up the remote's answer or hold more than `stepBytes` in memory.
 */
export interface FileBudget {
  limits: FileLimits;
  /** Aborted when the step's time for files is up: a file then fetching, and any after it, is not kept. */
  deadline: AbortSignal;
  /** Bytes still to keep, in bytes. */
  bytesLeft: number;
}

/**
 * A new budget for one exchange step under `limits`, with `deadline` (the exchange's, shared by its
 * steps; default one of `limits.filesTimeoutMs` from now). Output: {@link FileBudget}.
 */
export function fileBudget(limits: FileLimits = defaultFileLimits, deadline: AbortSignal = AbortSignal.timeout(limits.filesTimeoutMs)): FileBudget {
  return { limits, deadline, bytesLeft: limits.stepBytes };
}

/** A byte count as people read it (`5 MiB`, `300 bytes`). */
function bytesText(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`;
}

/** The longest text part (a message's content is at most 32,768 characters). */
const maxTextLength = 32_768;

/** What a remote's parts become. */
export interface ReadParts {
  /** The task's parts: text, data, and a file part for each file kept (at most 20 parts). */
  parts: TaskPart[];
  /** The parts as one message's text: text as it is, data as a JSON block, each file named (and, when not kept, where it is and why). */
  text: string;
  /** The files kept, to store (under the attachment ids `parts` name) when what carries them is recorded. */
  files: PendingFile[];
}

/** Where the files come from and how far the exchange may go. */
export interface FileContext {
  /** The remote agent (its URL's origin gets its headers). */
  remote: RemoteAgent;
  policy: UrlPolicy;
  /** The exchange's signal: aborted, reading stops and the abort is thrown (the exchange is retried). */
  signal: AbortSignal;
  /** The step's budget for files (default: a new {@link fileBudget} per call); its deadline never fails the exchange. */
  budget?: FileBudget;
}

/** A file's name as an attachment takes it (1–255 characters, no control characters), else `fallback`. */
function fileName(name: string, fallback: string): string {
  const cleaned = name.replace(/[\u0000-\u001f\u007f]/g, '').trim().slice(0, 255).trim();
  const checked = CreateAttachmentBody.shape.filename.safeParse(cleaned);
  return checked.success ? checked.data : fallback;
}

/** A media type as an attachment takes it (it is served back as the content's type), else `application/octet-stream`. */
function mediaType(...candidates: Array<string | null | undefined>): string {
  for (const candidate of candidates) {
    if (!candidate) continue;
    const checked = CreateAttachmentBody.shape.content_type.safeParse(candidate);
    if (checked.success && checked.data !== '') return checked.data;
  }
  return 'application/octet-stream';
}

/** The last segment of a URL's path, as a file name. */
function nameInUrl(url: string): string {
  try {
    return decodeURIComponent(new URL(url).pathname.split('/').filter(Boolean).at(-1) ?? '');
  } catch {
    return '';
  }
}

/** Whether two URLs share an origin (scheme, host and port). */
function sameOrigin(a: string, b: string): boolean {
  try {
    return new URL(a).origin === new URL(b).origin;
  } catch {
    return false;
  }
}

/** The outcome of fetching a file by URL: its bytes and type, or why it was not kept. */
export type FetchedFile = { ok: true; data: Buffer; contentType: string | null } | { ok: false; reason: string };

/**
 * Fetches the file at `url` for the remote of `context` (the rules in the module's comment), at
 * most `limit` bytes (default 5 MiB). Output: {@link FetchedFile}; every failure of the file is a
 * reason, without any header value. Errors: only the exchange's abort (`context.signal`), rethrown: the file's own timeout
 * and the step's deadline (`context.budget`) are reasons, never errors.
 */
export async function fetchRemoteFile(url: string, context: FileContext, limit = maxAttachmentBytes): Promise<FetchedFile> {
  let protocol: string;
  try {
    protocol = new URL(url).protocol;
  } catch {
    return { ok: false, reason: 'not a URL' };
  }
  if (protocol !== 'https:' && protocol !== 'http:') return { ok: false, reason: `a ${protocol} URL is not fetched` };
  const headers = sameOrigin(url, context.remote.url) ? context.remote.headers : {};
  const budget = context.budget ?? fileBudget();
  if (budget.deadline.aborted) return { ok: false, reason: `the files of this answer took more than ${budget.limits.filesTimeoutMs} ms` };
  const fileTimeout = AbortSignal.timeout(budget.limits.fileTimeoutMs);
  const signal = AbortSignal.any([context.signal, fileTimeout, budget.deadline]);
  const tooLarge = { ok: false as const, reason: limit === maxAttachmentBytes ? "larger than 5 MiB, an attachment's limit" : `larger than the ${bytesText(limit)} still kept of this answer's files` };
  try {
    const response = await remoteFetch({ url: context.remote.url, headers }, context.policy, signal)(url, { method: 'GET' });
    if (!response.ok) {
      await response.body?.cancel().catch(() => {});
      return { ok: false, reason: `the remote answered ${response.status}` };
    }
    const declared = Number(response.headers.get('content-length') ?? '');
    if (Number.isFinite(declared) && declared > limit) {
      await response.body?.cancel().catch(() => {});
      return tooLarge;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    if (response.body) {
      const reader = response.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        size += value.byteLength;
        if (size > limit) {
          await reader.cancel().catch(() => {});
          return tooLarge;
        }
        chunks.push(Buffer.from(value));
      }
    }
    return { ok: true, data: Buffer.concat(chunks), contentType: response.headers.get('content-type') };
  } catch (error) {
    if (context.signal.aborted) throw error;
    if (budget.deadline.aborted) return { ok: false, reason: `the files of this answer took more than ${budget.limits.filesTimeoutMs} ms` };
    return { ok: false, reason: fileTimeout.aborted ? `no answer within ${budget.limits.fileTimeoutMs} ms` : remoteErrorText(error, context.remote) };
  }
}

/**
 * Reads a remote's A2A parts (A2A v1.0 §4.1.6) as the service keeps them: see {@link ReadParts} and
 * the module's comment. Text parts longer than 32,768 characters are cut there, empty ones
 * dropped; the parts after the 20th are dropped from `parts` (still in `text`). Files are kept
 * within `context.budget` (its bytes and deadline, shared by the reads of one step): past them a
 * file is named with why, not kept. Output: {@link ReadParts}. Errors: only the exchange's abort, rethrown.
 */
export async function readRemoteParts(parts: readonly A2aPart[], context: FileContext): Promise<ReadParts> {
  const budget = context.budget ?? fileBudget();
  const fileContext: FileContext = { ...context, budget };
  const out: TaskPart[] = [];
  const texts: string[] = [];
  const files: PendingFile[] = [];
  const keep = (name: string, type: string, data: Buffer) => {
    const file: PendingFile = { attachmentId: newId(), filename: name, contentType: type, data };
    files.push(file);
    budget.bytesLeft -= data.length;
    out.push({ file: { name, media_type: type, attachment_id: file.attachmentId } });
    texts.push(`[file: ${name} (${type})]`);
  };
  const named = (text: string) => {
    out.push({ text: text.slice(0, maxTextLength) });
    texts.push(text);
  };
  for (const part of parts) {
    const content = part.content;
    if (content?.$case === 'text') {
      if (content.value === '') continue;
      out.push({ text: content.value.slice(0, maxTextLength) });
      texts.push(content.value);
    } else if (content?.$case === 'data') {
      if (content.value === undefined) continue;
      out.push({ data: content.value });
      texts.push(`\`\`\`json\n${JSON.stringify(content.value, null, 2)}\n\`\`\``);
    } else if (content?.$case === 'raw') {
      const name = fileName(part.filename, 'attachment');
      const type = mediaType(part.mediaType);
      const data = Buffer.from(content.value);
      if (out.length >= maxTaskParts) texts.push(`[file: ${name} (${type}), not kept: past the ${maxTaskParts} parts kept]`);
      else if (data.length > maxAttachmentBytes) named(`[file: ${name} (${type}), not kept: larger than 5 MiB, an attachment's limit]`);
      else if (data.length > budget.bytesLeft) named(`[file: ${name} (${type}), not kept: past the ${bytesText(budget.limits.stepBytes)} of files kept of one answer]`);
      else keep(name, type, data);
    } else if (content?.$case === 'url') {
      const url = content.value;
      const name = fileName(part.filename, fileName(nameInUrl(url), 'attachment'));
      const where = `${name} (${mediaType(part.mediaType)}) at ${url.slice(0, 2000)}`;
      // Past the parts kept, a file is not fetched: nothing would name it.
      if (out.length >= maxTaskParts) {
        texts.push(`[file: ${where}, not kept: past the ${maxTaskParts} parts kept]`);
        continue;
      }
      if (budget.bytesLeft <= 0) {
        named(`[file: ${where}, not kept: past the ${bytesText(budget.limits.stepBytes)} of files kept of one answer]`);
        continue;
      }
      const fetched = await fetchRemoteFile(url, fileContext, Math.min(maxAttachmentBytes, budget.bytesLeft));
      if (fetched.ok) keep(name, mediaType(part.mediaType, fetched.contentType), fetched.data);
      else named(`[file: ${where}, not kept: ${fetched.reason}]`);
    }
  }
  return { parts: out.slice(0, maxTaskParts), text: texts.join('\n\n'), files };
}

// PGlite returns bytea as Uint8Array, pg as Buffer: the SDK's `raw` takes a Buffer.
function asBytes(value: unknown): Buffer {
  if (Buffer.isBuffer(value)) return value;
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  throw new Error('attachment data is not binary');
}

/**
 * The attachments `attachmentIds` of a message of organization `orgId`, in order, as A2A file
 * parts carrying their bytes (`raw`, with the attachment's file name and media type), for a
 * message sent to a remote A2A agent. An id that names no attachment of the organization any more
 * (deleted meanwhile) is left out. At most `maxBytes` bytes of attachments (default 20 MiB,
 * {@link defaultFileLimits}) are loaded and sent: an attachment past them goes as a text part
 * naming it (name, media type, size, id), so one message never holds more than that in memory.
 * Errors: the storage's.
 */
export async function attachmentParts(db: Queryable, orgId: string, attachmentIds: readonly string[], maxBytes = defaultFileLimits.messageBytes): Promise<A2aPart[]> {
  if (attachmentIds.length === 0) return [];
  // Sizes first: only the attachments within the budget are read.
  const rows = await db.query<{ id: string; filename: string; content_type: string; size: number | string }>(
    `SELECT id, filename, content_type, size_bytes AS size FROM attachments WHERE org_id = $1 AND id = ANY($2::uuid[])`,
    [orgId, [...attachmentIds]],
  );
  const byId = new Map(rows.map((row) => [row.id, row]));
  let left = maxBytes;
  const sent = new Set<string>();
  for (const id of attachmentIds) {
    const row = byId.get(id);
    if (!row || sent.has(id) || Number(row.size) > left) continue;
    left -= Number(row.size);
    sent.add(id);
  }
  const data = sent.size === 0 ? [] : await db.query<{ id: string; data: unknown }>(`SELECT id, data FROM attachments WHERE org_id = $1 AND id = ANY($2::uuid[])`, [orgId, [...sent]]);
  const bytesById = new Map(data.map((row) => [row.id, row.data]));
  return attachmentIds.flatMap((id): A2aPart[] => {
    const row = byId.get(id);
    if (!row) return [];
    const bytes = bytesById.get(id);
    if (bytes === undefined) {
      const text = `[attachment: ${row.filename} (${row.content_type}, ${Number(row.size)} bytes, id ${id}), not sent: past the ${bytesText(maxBytes)} of attachments one message sends]`;
      return [{ content: { $case: 'text' as const, value: text }, mediaType: 'text/plain', filename: '', metadata: { attachment_id: id } }];
    }
    return [{ content: { $case: 'raw' as const, value: asBytes(bytes) }, mediaType: row.content_type, filename: row.filename, metadata: { attachment_id: id } }];
  });
}
