/**
 * A loopback stand-in for an OpenAI-compatible model server that streams its replies slowly, for
 * the benchmark of replies as they are written (bench/streams.ts, contract §13): `POST
 * …/chat/completions` with `stream: true` is answered as Chat Completions' event stream, one token
 * per `chat.completion.chunk`, a pause between tokens, and the moment each token was handed to the
 * socket is kept in a side table (`performance.now()` of this process), so a reader in the same
 * process can tell how long a token took to reach it.
 *
 * The script: the last user message holds `stream run=R tokens=N gap=A-B` (R a word of letters
 * and digits, N ≤ 10,000 tokens, pauses of A to B ms, 0 ≤ A ≤ B ≤ 10,000); the reply is the
 * tokens `R:0 `, `R:1 `, … `R:N-1 `, each written after a pause drawn from A–B (seeded: the same
 * run draws the same pauses). Any other message is answered `ready` in one chunk. A request
 * without `stream: true` gets the same text as one JSON answer (no pacing). (bench/openai-stand-in.ts
 * is the turn benchmark's stand-in, answering at once; test/support/openai-stub.ts the tests'.)
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the stand-in wrote of one scripted reply. */
export interface StreamedRun {
  /** When each token was handed to the socket, by token index; `performance.now()` of this process, ms. */
  sentAt: number[];
  /** The tokens asked for. */
  tokens: number;
  /** Whether the whole reply was written (the last chunk and `[DONE]`); false while it streams, or when the client went away. */
  finished: boolean;
}

/** A running stand-in. */
export interface StreamingStandIn {
  /** Give the service `${origin}/v1` as `OPENAI_BASE_URL`. */
  origin: string;
  /** Scripted replies by run word (`R` of the script), as they are written. */
  runs: Map<string, StreamedRun>;
  close(): Promise<void>;
}

/** The script of a message (see the module comment); undefined when it is none. */
export interface StreamScript {
  run: string;
  tokens: number;
  minGapMs: number;
  maxGapMs: number;
}

/** The script a user message's text holds, or undefined. */
export function parseStreamScript(text: string): StreamScript | undefined {
  const match = /stream run=([A-Za-z0-9]{1,40}) tokens=(\d{1,5}) gap=(\d{1,5})-(\d{1,5})/.exec(text);
  if (!match) return undefined;
  const [tokens, minGapMs, maxGapMs] = [Number(match[2]), Number(match[3]), Number(match[4])];
  if (tokens < 1 || tokens > 10_000 || minGapMs > maxGapMs || maxGapMs > 10_000) return undefined;
  return { run: match[1]!, tokens, minGapMs, maxGapMs };
}

/** The text of token `index` of run `run` (a reader finds `run:index` in a delta's text). */
export function tokenText(run: string, index: number): string {
  return `${run}:${index} `;
}

/** A small seeded random source (mulberry32) in [0, 1). */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A seed from a run word, so one run always draws the same pauses. */
function seedOf(run: string): number {
  let hash = 2166136261;
  for (const char of run) hash = Math.imul(hash ^ char.charCodeAt(0), 16777619);
  return hash >>> 0;
}

interface ChatMessage {
  role: string;
  content: unknown;
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p: { text?: unknown }) => (typeof p?.text === 'string' ? p.text : '')).join('');
  return '';
}

/** Writes a paced reply of `script` on `res` as Chat Completions' event stream; resolves when done or the client went away. */
async function streamPaced(res: ServerResponse, script: StreamScript, model: string, includeUsage: boolean, record: StreamedRun): Promise<void> {
  const head = { id: `chatcmpl-${script.run}`, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model, system_fingerprint: null };
  const frame = (delta: object, finishReason: string | null = null) =>
    `data: ${JSON.stringify({ ...head, choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }], ...(includeUsage ? { usage: null } : {}) })}\n\n`;
  let gone = false;
  res.once('close', () => (gone = true));
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.write(frame({ role: 'assistant', content: '' }));
  const random = seeded(seedOf(script.run));
  for (let i = 0; i < script.tokens; i += 1) {
    const pause = script.minGapMs + random() * (script.maxGapMs - script.minGapMs);
    await new Promise((resolve) => setTimeout(resolve, pause));
    if (gone) return;
    // The send time is taken as the token is handed to the socket, after the timer's own lateness.
    record.sentAt[i] = performance.now();
    res.write(frame({ content: tokenText(script.run, i) }));
  }
  res.write(frame({}, 'stop'));
  if (includeUsage) res.write(`data: ${JSON.stringify({ ...head, choices: [], usage: { prompt_tokens: 11, completion_tokens: script.tokens, total_tokens: 11 + script.tokens } })}\n\n`);
  res.end('data: [DONE]\n\n');
  record.finished = true;
}

/** Answers `text` at once: one JSON completion, or an event stream of one chunk when `stream`. */
function answerAtOnce(res: ServerResponse, text: string, model: string, stream: boolean, includeUsage: boolean): void {
  const base = { id: 'chatcmpl-ready', created: Math.floor(Date.now() / 1000), model, system_fingerprint: null };
  const usage = { prompt_tokens: 11, completion_tokens: 1, total_tokens: 12 };
  if (!stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ ...base, object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }], usage }));
    return;
  }
  const chunk = (delta: object, finishReason: string | null = null) =>
    `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }], ...(includeUsage ? { usage: null } : {}) })}\n\n`;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.end(
    chunk({ role: 'assistant', content: '' }) +
      chunk({ content: text }) +
      chunk({}, 'stop') +
      (includeUsage ? `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [], usage })}\n\n` : '') +
      'data: [DONE]\n\n',
  );
}

/** Starts the stand-in on a free loopback port. */
export async function startStreamingStandIn(): Promise<StreamingStandIn> {
  const runs = new Map<string, StreamedRun>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url?.split('?')[0]!.endsWith('/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
        return;
      }
      let body: { model?: string; messages?: ChatMessage[]; stream?: boolean; stream_options?: { include_usage?: boolean } };
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch (error) {
        res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: String(error) } }));
        return;
      }
      const messages = body.messages ?? [];
      const lastUser = messages.findLast((m) => m.role === 'user');
      const script = parseStreamScript(textOf(lastUser?.content));
      const model = body.model ?? 'stand-in';
      const includeUsage = body.stream_options?.include_usage === true;
      if (!script) {
        answerAtOnce(res, 'ready', model, body.stream === true, includeUsage);
        return;
      }
      if (body.stream !== true) {
        answerAtOnce(res, Array.from({ length: script.tokens }, (_, i) => tokenText(script.run, i)).join(''), model, false, includeUsage);
        return;
      }
      // A retried request of the same run starts its side table afresh.
      const record: StreamedRun = { sentAt: [], tokens: script.tokens, finished: false };
      runs.set(script.run, record);
      void streamPaced(res, script, model, includeUsage, record);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    runs,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
