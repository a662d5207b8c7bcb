/**
 * A real HTTP server on loopback standing in for an OpenAI-compatible model server (vLLM, Ollama,
 * LiteLLM…): it serves `POST …/chat/completions`, records every request and answers as a test
 * says. The service reaches it through `OPENAI_BASE_URL`, as it would reach a real one.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as the stub received it. */
export interface StubRequest {
  /** 1-based arrival number. */
  n: number;
  path: string;
  headers: IncomingMessage['headers'];
  body: { model: string; messages: Array<{ role: string; content: string }>; [key: string]: unknown };
  /** Arrival time (ms since the epoch). */
  at: number;
  /** Set once the client gave up on the request (closed it before an answer was sent). */
  aborted: boolean;
}

/** How the stub answers one request: a status, headers and a JSON body, or never (`hang`). */
export type StubAnswer = { status: number; headers?: Record<string, string>; body: unknown } | 'hang';

/** A chat completion answering `content`, with the given token usage (OpenAI's response shape). */
export function completion(model: string, content: string, usage = { prompt_tokens: 11, completion_tokens: 7 }): StubAnswer {
  return {
    status: 200,
    body: {
      id: `chatcmpl-${Math.random().toString(36).slice(2)}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model,
      choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
      usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
    },
  };
}

/** The default answer: `reply to: <the last user message>`, 11 input and 7 output tokens. */
export function echoCompletion(request: StubRequest): StubAnswer {
  const last = request.body.messages.filter((m) => m.role === 'user').at(-1);
  return completion(request.body.model, `reply to: ${last?.content ?? ''}`);
}

/** A running stub. */
export interface OpenAiStub {
  /** `http://127.0.0.1:PORT`; give the service `${origin}/v1` (or any path prefix) as `OPENAI_BASE_URL`. */
  origin: string;
  requests: StubRequest[];
  /** The most requests that were open (received, not yet answered or closed) at once. */
  maxInFlight(): number;
  /** Resolves with the request once the stub has received `n` requests. */
  received(n: number): Promise<StubRequest>;
  close(): Promise<void>;
}

/**
 * Starts the stub on a free loopback port. `answer` decides each response (default
 * {@link echoCompletion}); a request to any path not ending in `/chat/completions` is 404.
 */
export async function startOpenAiStub(answer: (request: StubRequest) => StubAnswer | Promise<StubAnswer> = echoCompletion): Promise<OpenAiStub> {
  const requests: StubRequest[] = [];
  const waiters: Array<{ n: number; resolve: (r: StubRequest) => void }> = [];
  const held = new Set<ServerResponse>();
  let open = 0;
  let maxOpen = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
        res.writeHead(404).end();
        return;
      }
      const request: StubRequest = { n: requests.length + 1, path: req.url, headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')), at: Date.now(), aborted: false };
      requests.push(request);
      open += 1;
      maxOpen = Math.max(maxOpen, open);
      res.on('close', () => {
        open -= 1;
        if (!res.writableEnded) request.aborted = true;
        held.delete(res);
      });
      for (const waiter of waiters.filter((w) => w.n <= requests.length)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(requests[waiter.n - 1]!);
      }
      const reply = await answer(request);
      if (reply === 'hang') {
        held.add(res);
        return;
      }
      res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers }).end(JSON.stringify(reply.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    requests,
    maxInFlight: () => maxOpen,
    received(n) {
      if (requests.length >= n) return Promise.resolve(requests[n - 1]!);
      return new Promise((resolve) => waiters.push({ n, resolve }));
    },
    async close() {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * A rule of scripted replies: a request of `model` (any model when absent) whose last user
 * message matches `match` gets the N-th reply of `replies`, N being how many user messages of its
 * conversation match (so each thread follows the script on its own); past the end, the last one.
 */
export interface ScriptedRule {
  model?: string;
  match: RegExp;
  replies: string[];
}

/**
 * Answers by script, as a test of a conversation needs (an invalid reply, then a valid one;
 * `revise` twice, then `approve`): the first rule that matches a request answers it (see
 * {@link ScriptedRule}); a request no rule matches gets {@link echoCompletion}'s answer. The
 * script is read from each request's own conversation, so concurrent threads and tests do not
 * shift one another.
 */
export function scriptedCompletions(rules: readonly ScriptedRule[]): (request: StubRequest) => StubAnswer {
  return (request) => {
    const users = request.body.messages.filter((m) => m.role === 'user').map((m) => m.content);
    const last = users.at(-1) ?? '';
    const rule = rules.find((r) => (r.model === undefined || r.model === request.body.model) && r.match.test(last));
    if (!rule) return echoCompletion(request);
    const seen = users.filter((content) => rule.match.test(content)).length;
    return completion(request.body.model, rule.replies[Math.min(seen, rule.replies.length) - 1]!);
  };
}
