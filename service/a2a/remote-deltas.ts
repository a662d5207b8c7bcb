/**
 * A remote A2A agent's reply as it is written (contract §13, "Replies as they are written", for
 * the A2A participants of §12): when the remote streams an artifact in chunks
 * (`SendStreamingMessage`, `SubscribeToTask`: `TaskArtifactUpdateEvent`s with `append: true`, or
 * `lastChunk: false`), the text of its chunks is written as `message.delta`s of the reply that
 * will end the exchange (events/deltas.ts, batched as a provider turn's: 50 ms).
 *
 * - **The reply's id** is fixed before the first delta and derived from (agent, thread, our
 *   message) ({@link remoteReplyId}): a process that takes the exchange over after a crash, or a
 *   retry, writes under the same id, and the message that replies to ours (the final answer, the
 *   question of `input-required`, or the failure: one per message, unique `(sender_id,
 *   reply_to)`) is posted with it.
 * - **One artifact streams**: the first one the remote sends in chunks. A reply is one text; the
 *   other artifacts are the task's, as before, and come whole.
 * - **Streamed text that is not the reply.** The reply is the remote's final message, or (none)
 *   the artifacts' text, or its question: when what was streamed differs from what is posted, a
 *   `turn.restarted` item of the reply is written just before it (readers drop the streamed text
 *   and show the message). Streaming only what will surely be the reply is not possible: whether
 *   the remote ends with a message of its own is known only at the end, and holding the text back
 *   until then is what this is here to avoid.
 * - **Written again.** A new attempt at the same message (a retry, a process that took over, a
 *   remote restarted that sends the same chunks again) begins with events/deltas.ts
 *   `resumeDeltas`: a `turn.restarted` when the attempt before had written text, so no reader holds
 *   it twice; the deltas' index goes on. A chunk that starts the streamed artifact afresh
 *   (`append: false`) is a restart too.
 * - Working status messages with text stay messages of their own (posted at once, so they are
 *   visible as they come): they are not the reply's text.
 *
 * The streamed artifact is kept on the task under the reply's id (remote-record.ts): A2A streams
 * of our own server carry the deltas as chunks of the artifact whose id is the reply's id
 * (reply-deltas.ts), and the whole artifact, when the task completes, replaces them under that id.
 */
import { createHash } from 'node:crypto';
import type { Part as A2aPart } from '@a2a-js/sdk';
import { createDeltaWriter, resumeDeltas, signalLive, writeLiveItem, type DeltaTarget, type DeltaWriter } from '../events/deltas.ts';
import { postedContent } from './remote-record.ts';

/**
 * The id of the reply of agent `agentId` to our message `messageId` on `threadId`: a UUID (version
 * 8, name-based on SHA-256) derived from the three, the same in every process and attempt.
 */
export function remoteReplyId(agentId: string, threadId: string, messageId: string): string {
  const bytes = createHash('sha256').update(`a2a-reply\0${agentId}\0${threadId}\0${messageId}`).digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x80;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The text parts of `parts`, joined as chunks of one text (no separator). */
export function chunkText(parts: readonly A2aPart[]): string {
  return parts.map((part) => (part.content?.$case === 'text' ? part.content.value : '')).join('');
}

/**
 * Appends an artifact chunk's parts to the artifact's parts as A2A means it (`append: true`): a
 * text part that follows a text part continues it (the chunks of one streamed text make one text,
 * not one part per chunk), any other part is added.
 */
export function appendParts(parts: A2aPart[], chunk: readonly A2aPart[]): void {
  for (const part of chunk) {
    const last = parts.at(-1);
    if (part.content?.$case === 'text' && last?.content?.$case === 'text') {
      parts[parts.length - 1] = { ...last, content: { $case: 'text', value: last.content.value + part.content.value } };
    } else parts.push(part);
  }
}

/** The deltas of one exchange's reply (see the module's comment). */
export class RemoteReplyStream {
  /** The reply's id: its deltas name it, and the message that replies to ours is posted with it. */
  readonly replyId: string;
  /** The remote's artifact whose chunks are streamed (the first sent in chunks), once there is one. */
  streamedArtifact: string | undefined;
  readonly #target: DeltaTarget;
  readonly #writer: DeltaWriter;

  private constructor(target: DeltaTarget, writer: DeltaWriter) {
    this.replyId = target.messageId;
    this.#target = target;
    this.#writer = writer;
  }

  /**
   * Opens the reply's stream for an attempt at answering our message `messageId`: a
   * `turn.restarted` first when an attempt before had written text of it (`resumeDeltas`).
   * `onError` gets the failures of deltas' writes (they do not stop the exchange). Errors: the
   * storage's.
   */
  static async open(target: Omit<DeltaTarget, 'messageId'> & { incomingId: string }, onError: (error: unknown) => void): Promise<RemoteReplyStream> {
    const messageId = remoteReplyId(target.senderId, target.threadId, target.incomingId);
    const full: DeltaTarget = { db: target.db, hub: target.hub, threadId: target.threadId, messageId, senderId: target.senderId };
    const startIndex = await resumeDeltas(full.db, full.hub, full.threadId, messageId, full.senderId);
    return new RemoteReplyStream(full, createDeltaWriter(full, { startIndex, maxChars: 32_768, onError }));
  }

  /**
   * Takes an artifact update of the remote: `before` is the artifact's parts before it (undefined:
   * not seen yet). A chunk (`append` or not `lastChunk`) of the streamed artifact, or of the first
   * artifact sent in chunks, is written; a whole artifact is not (it is no text being written).
   * Errors: the storage's (writing a restart).
   */
  async artifactUpdate(artifactId: string, update: { append: boolean; lastChunk: boolean; parts: readonly A2aPart[] }, before: readonly A2aPart[] | undefined): Promise<void> {
    if (this.streamedArtifact === undefined) {
      if (!update.append && update.lastChunk) return;
      this.streamedArtifact = artifactId;
      // Taken up mid-artifact (a resubscription after a snapshot): the text so far first.
      if (update.append && before) this.#writer.push(chunkText(before));
    } else if (this.streamedArtifact !== artifactId) {
      return;
    } else if (!update.append || !before) {
      // The artifact starts afresh: what was streamed of it is not the reply's text.
      await this.#restart();
    }
    this.#writer.push(chunkText(update.parts));
  }

  /**
   * Before the message that replies to ours is posted with {@link replyId} (`content` as given to
   * remote-record.ts): writes out the text held, and a `turn.restarted` when what was streamed is
   * not that message's text (readers then drop it). Errors: the storage's.
   */
  async settle(content: string): Promise<void> {
    await this.#writer.flush();
    const streamed = this.#writer.text();
    if (streamed !== '' && streamed !== postedContent(content)) await this.#restart();
  }

  /** Writes out the text held (an exchange that ends without a reply: the next attempt's {@link open} finds it). Never rejects. */
  flush(): Promise<void> {
    return this.#writer.flush();
  }

  /** Writes out what is held, then a `turn.restarted` of the reply; the next delta begins a fresh text. */
  async #restart(): Promise<void> {
    await this.#writer.flush();
    if (this.#writer.text() === '') return;
    const { db, hub, threadId, messageId, senderId } = this.#target;
    if (await writeLiveItem(db, threadId, 'turn.restarted', { thread_id: threadId, message_id: messageId, sender_id: senderId })) signalLive(hub, threadId);
    this.#writer.reset();
  }
}
