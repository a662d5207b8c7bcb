/**
 * The ids of a person's event stream (contract §10, docs/console.md "What a session learns"): an
 * event's place in its organization's log (`seq`) is not the person's to know — numbers would
 * tell them how many events of others happened between theirs, and how far the log has come — so
 * their stream names each event by an opaque cursor instead, which only the service can turn back
 * into a seq to resume from.
 *
 * A cursor is one AES-256 block (the block cipher alone, a pseudorandom permutation, on one
 * 16-byte block: deterministic, so the same event has the same id in every stream, as an
 * EventSource expects) of an 8-byte tag of the organization and the 8-byte seq, in base64url (22
 * characters). Cursors of different seqs look unrelated: neither their order nor their distance
 * shows. The key is derived from the service's encryption key, so every process that shares it
 * (as they must for provider keys) reads every cursor; a cursor of another organization, or one
 * made up, is refused (its tag does not match, but for a chance of 2^-64).
 */
import { createCipheriv, createDecipheriv, createHash, timingSafeEqual } from 'node:crypto';
import type { SecretBox } from '../domain/secret-box.ts';

/** Turns a seq of an organization's log into a person's cursor and back. */
export interface EventCursors {
  /** The cursor of `seq` in `orgId`'s log. */
  seal(orgId: string, seq: number): string;
  /** The seq of `cursor` in `orgId`'s log, or undefined when it is no cursor of that log. Raises nothing. */
  open(orgId: string, cursor: string): number | undefined;
}

/** The 8 bytes that tie a cursor to its organization. */
function tagOf(orgId: string): Buffer {
  return createHash('sha256').update(`event-cursor:${orgId}`, 'utf8').digest().subarray(0, 8);
}

/** {@link EventCursors} keyed by `secrets` (its key for `person-event-cursor`). */
export function eventCursors(secrets: SecretBox): EventCursors {
  const key = secrets.deriveKey('person-event-cursor');
  return {
    seal(orgId, seq) {
      const block = Buffer.alloc(16);
      tagOf(orgId).copy(block, 0);
      block.writeBigUInt64BE(BigInt(seq), 8);
      const cipher = createCipheriv('aes-256-ecb', key, null).setAutoPadding(false);
      return Buffer.concat([cipher.update(block), cipher.final()]).toString('base64url');
    },
    open(orgId, cursor) {
      if (!/^[A-Za-z0-9_-]{22}$/.test(cursor)) return undefined;
      const decipher = createDecipheriv('aes-256-ecb', key, null).setAutoPadding(false);
      const block = Buffer.concat([decipher.update(Buffer.from(cursor, 'base64url')), decipher.final()]);
      if (block.length !== 16 || !timingSafeEqual(block.subarray(0, 8), tagOf(orgId))) return undefined;
      const seq = block.readBigUInt64BE(8);
      return seq <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(seq) : undefined;
    },
  };
}
