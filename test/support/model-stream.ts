/**
 * The vendor-independent part of the model stand-ins' streamed answers (openai-stub.ts,
 * anthropic-stub.ts): how a reply is cut into chunks and paced ({@link ChunkPace}), the frames a
 * vendor's stream is made of ({@link StreamFrame}), and what the stand-in records of each frame it
 * sent ({@link SentFrame}, {@link SentChunk}). model-stub-server.ts writes the frames.
 */

/**
 * How a streamed answer is cut and paced. Set for a whole stand-in (`startOpenAiStub(answer,
 * {chunk})`), for one answer (`{...completion(model, text), chunk}`) or for one scripted reply
 * (`paced(text, chunk)`, model-script.ts); an answer's fields win over the stand-in's.
 */
export interface ChunkPace {
  /**
   * How text is cut: at most N characters (code points) per chunk, or one word per chunk (`'word'`:
   * the word with the whitespace after it, the first also with the whitespace before it). Tool-call
   * arguments are cut in N characters, or in {@link WORD_ARGUMENT_CHARS} when `'word'` (JSON has
   * no spaces to cut at; a real model streams arguments a token of a few characters at a time).
   * Default `'word'`.
   */
  size?: number | 'word';
  /** How long to wait before each content chunk after a stream's first, in ms. Default 0. */
  delayMs?: number;
}

/** The default pace: word by word, at once. */
export const DEFAULT_PACE: Required<ChunkPace> = { size: 'word', delayMs: 0 };

/** The characters per chunk of tool-call arguments when the text is cut by word. */
export const WORD_ARGUMENT_CHARS = 4;

/** One server-sent event of a streamed answer, as a vendor's stand-in builds it. */
export interface StreamFrame {
  /** The SSE `event:` field (Anthropic names its events; OpenAI does not). */
  event?: string;
  /** The SSE `data:` field: a JSON text, or OpenAI's `[DONE]`. */
  data: string;
  /**
   * Set on a content chunk: the piece of text, or of tool-call arguments, the frame carries. Only
   * content chunks are paced (`delayMs`) and held (`hold()`); the frames around them are sent at once.
   */
  content?: { kind: ChunkKind; text: string };
}

/** What a content chunk carries: a piece of the reply's text, or of a tool call's arguments (JSON text). */
export type ChunkKind = 'text' | 'tool-input';

/** A frame as the stand-in sent it. */
export interface SentFrame {
  /**
   * When it was handed to the socket: ms since the epoch with sub-millisecond precision
   * (`performance.timeOrigin + performance.now()`), comparable with the same clock of another
   * process on the machine.
   */
  at: number;
  event: string | undefined;
  data: string;
}

/** A content chunk as the stand-in sent it (see {@link StreamFrame.content}). */
export interface SentChunk {
  /** As {@link SentFrame.at}. */
  at: number;
  kind: ChunkKind;
  /** The piece of text or of arguments it carried. */
  text: string;
}

/** `text` in chunks as `size` says (see {@link ChunkPace.size}); [] for ''. Joined, the chunks are `text`. */
export function cutText(text: string, size: ChunkPace['size'] = DEFAULT_PACE.size): string[] {
  if (text === '') return [];
  if (size === 'word') return text.match(/\s*\S+\s*/g) ?? [text];
  return cutByCharacters(text, size);
}

/** Tool-call arguments (a JSON text) in chunks as `size` says (see {@link ChunkPace.size}); [] for ''. */
export function cutArguments(json: string, size: ChunkPace['size'] = DEFAULT_PACE.size): string[] {
  if (json === '') return [];
  return cutByCharacters(json, size === 'word' ? WORD_ARGUMENT_CHARS : size);
}

function cutByCharacters(text: string, size: number | undefined): string[] {
  if (size === undefined || !Number.isInteger(size) || size < 1) throw new Error(`a chunk size is a positive whole number of characters or 'word', not ${String(size)}`);
  const characters = Array.from(text);
  const chunks: string[] = [];
  for (let i = 0; i < characters.length; i += size) chunks.push(characters.slice(i, i + size).join(''));
  return chunks;
}

/** The current time as {@link SentFrame.at} records it. */
export function preciseNow(): number {
  return performance.timeOrigin + performance.now();
}
