/**
 * A loopback stand-in for an OpenAI-compatible model server, for the turn benchmark
 * (bench/turns.ts): `POST …/chat/completions` answered at once, by a script read from the request
 * itself, and every request timed from its arrival to its answer written, so the benchmark can
 * subtract the provider's own time from a turn. (test/support/openai-stub.ts is the general
 * stand-in of the tests; this one is smaller and keeps timings, not request bodies.)
 *
 * The script: the last user message holds `steps=S calls=K`; while the turn has made fewer than S
 * steps of tool calls (assistant messages with `tool_calls` after that user message), the answer
 * is K calls of `tool` (default `whoami`, arguments `{}`); then a text reply. A message without
 * `steps=` is answered with text at once. A request with `stream: true` gets the same answer as
 * Chat Completions' event stream (`chat.completion.chunk` frames, the usage chunk when
 * `stream_options.include_usage` asks, then `data: [DONE]`), written at once.
 *
 * With `hold` (bench/a2a-streams.ts: turns that take a while), each chat completion request waits
 * for the promise `hold()` returns at its arrival before it is answered.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as the stand-in served it; times are `performance.now()` of this process, in ms. */
export interface ServedRequest {
  /** When the request's headers arrived (its body not yet read). */
  arrivedAt: number;
  /** When the last byte of the answer was handed to the socket. */
  answeredAt: number;
  /** Bytes of the request body and of the answer body. */
  requestBytes: number;
  answerBytes: number;
  /** Tool calls the answer asked for (0: a text reply). */
  calls: number;
}

/** A running stand-in. */
export interface OpenAiStandIn {
  /** Give the service `${origin}/v1` as `OPENAI_BASE_URL`. */
  origin: string;
  /** Every request served, in order of its answer (the benchmark empties it between turns). */
  served: ServedRequest[];
  close(): Promise<void>;
}

interface ChatMessage {
  role: string;
  content: unknown;
  tool_calls?: unknown[];
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p: { text?: unknown }) => (typeof p?.text === 'string' ? p.text : '')).join('');
  return '';
}

/** A chat completion (as {@link answerOf} writes it) as Chat Completions streams it: the event stream's text. */
function streamOf(completion: any, includeUsage: boolean): string {
  const head = { id: completion.id, object: 'chat.completion.chunk', created: completion.created, model: completion.model, system_fingerprint: null };
  const frame = (delta: object, finishReason: string | null = null) =>
    JSON.stringify({ ...head, choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }], ...(includeUsage ? { usage: null } : {}) });
  const { message, finish_reason: finishReason } = completion.choices[0];
  const frames = [frame({ role: 'assistant', content: message.content === null ? null : '' })];
  if (message.content) frames.push(frame({ content: message.content }));
  (message.tool_calls ?? []).forEach((call: { id: string; function: { name: string; arguments: string } }, index: number) => {
    frames.push(frame({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }] }));
    frames.push(frame({ tool_calls: [{ index, function: { arguments: call.function.arguments } }] }));
  });
  frames.push(frame({}, finishReason));
  if (includeUsage) frames.push(JSON.stringify({ ...head, choices: [], usage: completion.usage }));
  frames.push('[DONE]');
  return frames.map((data) => `data: ${data}\n\n`).join('');
}

/** The script's answer to one request body: K tool calls, or text. */
function answerOf(body: { model?: string; messages?: ChatMessage[] }, tool: string): { json: unknown; calls: number } {
  const messages = body.messages ?? [];
  const lastUser = messages.findLastIndex((m) => m.role === 'user');
  const plan = /steps=(\d+)\s+calls=(\d+)/.exec(textOf(messages[lastUser]?.content));
  const stepsDone = messages.slice(lastUser + 1).filter((m) => m.role === 'assistant' && (m.tool_calls?.length ?? 0) > 0).length;
  const usage = { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 };
  const base = { id: `chatcmpl-${stepsDone}`, object: 'chat.completion', created: Math.floor(Date.now() / 1000), model: body.model ?? 'stand-in', usage };
  if (plan && stepsDone < Number(plan[1])) {
    const calls = Number(plan[2]);
    const toolCalls = Array.from({ length: calls }, (_, i) => ({ id: `call_${stepsDone + 1}_${i + 1}`, type: 'function', function: { name: tool, arguments: '{}' } }));
    return {
      json: { ...base, choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: toolCalls }, finish_reason: 'tool_calls' }] },
      calls,
    };
  }
  return { json: { ...base, choices: [{ index: 0, message: { role: 'assistant', content: `done after ${stepsDone} steps` }, finish_reason: 'stop' }] }, calls: 0 };
}

/**
 * Starts the stand-in on a free loopback port; `tool` is the tool its steps call; `hold`, when
 * given, is called as each chat completion request's body has arrived, and its answer waits for
 * the promise it returns (a rejected one answers 500).
 */
export async function startOpenAiStandIn(tool = 'whoami', hold?: () => Promise<void>): Promise<OpenAiStandIn> {
  const served: ServedRequest[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const arrivedAt = performance.now();
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      if (req.method !== 'POST' || !req.url?.split('?')[0]!.endsWith('/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
        return;
      }
      let answer: { json: unknown; calls: number };
      let body: { model?: string; messages?: ChatMessage[]; stream?: boolean; stream_options?: { include_usage?: boolean } };
      try {
        body = JSON.parse(raw.toString('utf8'));
        answer = answerOf(body, tool);
      } catch (error) {
        res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: String(error) } }));
        return;
      }
      const stream = body.stream === true;
      const text = stream ? streamOf(answer.json, body.stream_options?.include_usage === true) : JSON.stringify(answer.json);
      const write = () => {
        res.writeHead(200, stream ? { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } : { 'content-type': 'application/json' });
        res.end(text, () => served.push({ arrivedAt, answeredAt: performance.now(), requestBytes: raw.length, answerBytes: Buffer.byteLength(text), calls: answer.calls }));
      };
      if (!hold) return write();
      hold().then(write, (error: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: String(error) } }));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    served,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
