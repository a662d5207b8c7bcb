/**
 * The measurements of the benchmark of replies as they are written (bench/streams.ts; `npm run
 * bench` runs them as its `streams` phase; contract §13, issue 39), on one acs-server process
 * (bench/server.ts) whose provider agent's model is a loopback stand-in streaming slowly
 * (bench/streaming-stand-in.ts, in this process).
 *
 * - **One reader**: one SSE reader of the thread's stream (`GET /threads/{id}/stream`) while the
 *   agent writes replies of 200 tokens 10–20 ms apart: for every token, the time from the
 *   stand-in's send to the reader's receipt of the `message.delta` that carries it; and the same
 *   from each delta's newest token. Then a reply of tokens 60–70 ms apart (each written at once:
 *   the path without the 50 ms batching).
 * - **Time to first event**: a reader opened alone with `after` the message before the last reply
 *   (it catches up that reply's deltas and the reply), from its request sent to its first item
 *   received; then 1,000 opened at once (the second opening: see memory).
 * - **Memory per open stream**: the server's JS heap and RSS (each after a full collection) with
 *   the 1,000 streams open and idle, less before they opened, ÷ 1,000; the second time they open
 *   (the first opening's RSS growth, allocator and storage included, is given beside it).
 * - **1,000 readers**: the same replies with 1,000 readers of the one thread.
 */
import http from 'node:http';
import { createClient, expectStatus, type BenchClient } from './client.ts';
import type { ServerProcess } from './scenarios.ts';
import type { StreamingStandIn } from './streaming-stand-in.ts';

/** Sizes of a run. */
export interface StreamsPlan {
  /** Tokens of each measured reply, and the pause between two tokens (ms, drawn uniformly). */
  tokens: number;
  minGapMs: number;
  maxGapMs: number;
  /** Replies measured with one reader, and with `readers` readers. */
  singleRounds: number;
  manyRounds: number;
  /** Readers of the fan-out part. */
  readers: number;
  /** The reply of widely spaced tokens (each written at once): its tokens and pauses. */
  spacedTokens: number;
  spacedGapMs: [number, number];
  /** Readers opened alone, one after another, for the time to first event. */
  aloneOpens: number;
}

/** The default plan; `quick` for a smoke run. */
export function streamsPlan(quick: boolean): StreamsPlan {
  return quick
    ? { tokens: 100, minGapMs: 10, maxGapMs: 20, singleRounds: 2, manyRounds: 1, readers: 200, spacedTokens: 30, spacedGapMs: [60, 70], aloneOpens: 5 }
    : { tokens: 200, minGapMs: 10, maxGapMs: 20, singleRounds: 5, manyRounds: 3, readers: 1_000, spacedTokens: 100, spacedGapMs: [60, 70], aloneOpens: 20 };
}

/** What readers received of the replies of one or more rounds; latencies in ms. */
export interface RoundFigures {
  /** Per token received: its delta's receipt − the token's send. */
  tokenMs: number[];
  /** Per delta received: its receipt − the send of its newest token. */
  newestMs: number[];
  /** `message.delta`s per reply (one reader's view). */
  deltasPerReply: number[];
  /** Tokens sent × readers, and how many of them no reader got, or a reader got twice. */
  expected: number;
  lost: number;
  repeated: number;
  /** Replies whose deltas joined differ from their `message.created` (per reader), or with a `turn.restarted`. */
  mismatched: number;
}

/** A backend's figures. */
export interface StreamsResult {
  backend: 'pglite' | 'postgres';
  label: string;
  single: RoundFigures;
  spaced: RoundFigures;
  /** Time to first event of a reader opened alone, ms. */
  firstEventAlone: number[];
  many: RoundFigures;
  /** Time to first event of each of the readers opened at once, ms, and the time until all had it, s. */
  firstEventMany: number[];
  openAllSeconds: number;
  readers: number;
  /**
   * The server's memory after a full collection, bytes: before the readers opened and with them
   * open and idle, the second time they opened (`rssCold`, `rssColdWith`: the first time).
   */
  memory: { rssCold: number; rssColdWith: number; rssBefore: number; rssWith: number; heapBefore: number; heapWith: number };
}

/** The p-th percentile (nearest rank) of `values` (sorted here); NaN when there are none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `event: message.created` as a reader counts it on the wire (22 characters: the tail kept is one shorter). */
const createdMark = 'event: message.created';

/**
 * One SSE reader of a thread's stream, kept cheap while it reads: each chunk is stored with its
 * arrival time and parsed after the round (so 1,000 readers in this process add as little as they
 * can to one another's receipt times).
 */
interface Reader {
  /** `performance.now()` when the request was sent, and when its first item (a frame with an id) arrived. */
  sentAt: number;
  firstItemAt: number;
  chunks: Array<{ at: number; text: string }>;
  /** `message.created` frames received so far. */
  created: number;
  close(): void;
}

/**
 * Opens a reader of `threadId` (`after`: a position, or undefined for the stream's end); resolves
 * once its first item arrived (with `after`) or once it is connected (without). Errors: rejects on
 * a status other than 200 or a failed connection.
 */
function openReader(baseUrl: string, apiKey: string, threadId: string, after: string | undefined): Promise<Reader> {
  const path = `/api/v1/threads/${threadId}/stream${after === undefined ? '' : `?after=${encodeURIComponent(after)}`}`;
  return new Promise((resolve, reject) => {
    const reader: Reader = { sentAt: performance.now(), firstItemAt: NaN, chunks: [], created: 0, close: () => request.destroy() };
    let tail = '';
    let settled = false;
    const request = http.get(`${baseUrl}${path}`, { headers: { 'x-api-key': apiKey, accept: 'text/event-stream' }, agent: false }, (response) => {
      if (response.statusCode !== 200) {
        settled = true;
        reject(new Error(`thread stream: HTTP ${response.statusCode}`));
        response.resume();
        return;
      }
      response.setEncoding('utf8');
      response.on('data', (text: string) => {
        const at = performance.now();
        reader.chunks.push({ at, text });
        const seen = tail + text;
        for (let from = seen.indexOf(createdMark); from >= 0; from = seen.indexOf(createdMark, from + 1)) reader.created += 1;
        if (!settled && (after === undefined ? seen.includes(': connected') : seen.includes('\n\nid: '))) {
          settled = true;
          reader.firstItemAt = at;
          resolve(reader);
        }
        tail = seen.slice(-(createdMark.length - 1));
      });
    });
    request.on('error', (error) => {
      if (!settled) reject(error);
    });
  });
}

/** One frame of a thread's stream as received. */
interface Frame {
  at: number;
  id: string;
  event: string;
  data: any;
}

/** The frames of a reader's chunks (comments and keep-alives left out); the chunks are emptied. */
function takeFrames(reader: Reader): Frame[] {
  const frames: Frame[] = [];
  let buffer = '';
  for (const { at, text } of reader.chunks) {
    buffer += text;
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const raw = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let id = '';
      let event = 'message';
      let data = '';
      for (const line of raw.split('\n')) {
        if (line.startsWith('id: ')) id = line.slice(4);
        else if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data += line.slice(6);
      }
      if (id !== '') frames.push({ at, id, event, data: event === 'message.delta' || event === 'message.created' || event === 'turn.restarted' ? JSON.parse(data) : undefined });
    }
  }
  // What is left is a frame still coming: kept for the next round.
  reader.chunks = buffer === '' ? [] : [{ at: reader.chunks.at(-1)!.at, text: buffer }];
  return frames;
}

/** An empty {@link RoundFigures}. */
function noFigures(): RoundFigures {
  return { tokenMs: [], newestMs: [], deltasPerReply: [], expected: 0, lost: 0, repeated: 0, mismatched: 0 };
}

/** The fixture of one backend: a human and a provider agent on one edge, a thread between them. */
interface Fixture {
  client: BenchClient;
  server: ServerProcess;
  standIn: StreamingStandIn;
  ann: string;
  agent: string;
  threadId: string;
  /** The SSE id (the seq) of the thread's last message: readers opened `after` the one before catch up the last reply. */
  lastSeq: number;
  runs: number;
}

/**
 * Has the agent write one reply of `tokens` tokens `gap` ms apart while `readers` read the thread
 * (ann's message asks for it); waits until every reader has the reply's `message.created`, then
 * adds what they received to `into`. `count`: false for a warm-up (nothing added).
 * Errors: throws when the reply does not reach every reader within a minute past its pacing.
 */
async function round(f: Fixture, readers: Reader[], tokens: number, gap: [number, number], into: RoundFigures, count = true): Promise<void> {
  f.runs += 1;
  const run = `r${f.runs}`;
  const base = readers.map((r) => r.created);
  expectStatus(
    await f.client.call('POST', `/threads/${f.threadId}/messages`, { sender_agent_id: f.ann, content: `stream run=${run} tokens=${tokens} gap=${gap[0]}-${gap[1]}` }),
    201,
    'post the message the agent answers',
  );
  const deadline = performance.now() + 60_000 + tokens * gap[1];
  // Two messages per round: ann's, then the reply.
  while (readers.some((r, i) => r.created < base[i]! + 2)) {
    if (performance.now() > deadline) {
      const behind = readers.filter((r, i) => r.created < base[i]! + 2).length;
      throw new Error(`bench:streams: reply ${run}: ${behind} of ${readers.length} readers did not get it within a minute past its pacing`);
    }
    await sleep(20);
  }
  const sent = f.standIn.runs.get(run);
  if (!sent?.finished || sent.sentAt.length !== tokens) throw new Error(`bench:streams: reply ${run}: the stand-in wrote ${sent?.sentAt.length ?? 0} of ${tokens} tokens`);
  f.lastSeq += 2;
  if (!count) {
    for (const reader of readers) takeFrames(reader);
    return;
  }
  const tokenPattern = new RegExp(`${run}:(\\d+) `, 'g');
  for (const [i, reader] of readers.entries()) {
    const frames = takeFrames(reader);
    const reply = frames.find((fr) => fr.event === 'message.created' && fr.data.sender_id === f.agent);
    if (!reply) throw new Error(`bench:streams: reply ${run}: reader ${i} has no message.created of the agent`);
    f.lastSeq = Math.max(f.lastSeq, Number(reply.id));
    const deltas = frames.filter((fr) => fr.event === 'message.delta' && fr.data.message_id === reply.data.message_id);
    if (i === 0) into.deltasPerReply.push(deltas.length);
    const got = new Uint8Array(tokens);
    for (const delta of deltas) {
      let newest = -1;
      for (const match of (delta.data.text as string).matchAll(tokenPattern)) {
        const index = Number(match[1]);
        if (got[index]) into.repeated += 1;
        got[index] = 1;
        into.tokenMs.push(delta.at - sent.sentAt[index]!);
        newest = Math.max(newest, index);
      }
      if (newest >= 0) into.newestMs.push(delta.at - sent.sentAt[newest]!);
    }
    into.expected += tokens;
    into.lost += tokens - got.reduce((n, x) => n + x, 0);
    const restarted = frames.some((fr) => fr.event === 'turn.restarted' && fr.data.message_id === reply.data.message_id);
    if (restarted || deltas.map((d) => d.data.text).join('') !== reply.data.content) into.mismatched += 1;
  }
}

/** Opens `n` readers `after` the given position at once. Output: the readers, in order, once each has its first item. */
async function openMany(f: Fixture, n: number, after: string): Promise<Reader[]> {
  return Promise.all(Array.from({ length: n }, () => openReader(f.server.url, f.server.apiKey, f.threadId, after)));
}

/** The server's memory after a full collection (bench/server.ts `memory`). */
async function serverMemory(server: ServerProcess): Promise<NodeJS.MemoryUsage> {
  return (await server.send({ type: 'memory' })) as NodeJS.MemoryUsage;
}

/**
 * Every measurement of the module comment on `server` (a fresh bench/server.ts process whose
 * `OPENAI_BASE_URL` is `standIn`'s). Output: the figures; `log` gets a line per part.
 */
export async function measureStreams(
  backend: StreamsResult['backend'],
  label: string,
  server: ServerProcess,
  standIn: StreamingStandIn,
  plan: StreamsPlan,
  log: (line: string) => void,
): Promise<StreamsResult> {
  const client = createClient(server.url, server.apiKey);
  try {
    expectStatus(await client.call('PUT', `/organizations/${server.orgId}/api-keys/openai`, { api_key: 'sk-bench-stand-in' }), 200, 'provider key');
    const team = expectStatus(await client.call('POST', `/organizations/${server.orgId}/teams`, { team_name: 'streams' }), 201, 'team').body.team_id as string;
    const ann = expectStatus(await client.call('POST', `/teams/${team}/humans`, { name: 'ann' }), 201, 'human').body.human_id as string;
    const agent = expectStatus(await client.call('POST', `/teams/${team}/agents`, { name: 'writer', provider: 'openai', model: 'gpt-bench' }), 201, 'agent').body.agent_id as string;
    const edge = expectStatus(await client.call('POST', `/teams/${team}/edges`, { participants: [ann, agent] }), 201, 'edge').body.edge_id as string;
    const threadId = expectStatus(await client.call('POST', `/edges/${edge}/threads`, { sender_agent_id: ann, content: 'hello' }), 201, 'thread').body.thread_id as string;
    const f: Fixture = { client, server, standIn, ann, agent, threadId, lastSeq: 1, runs: 0 };
    const gap: [number, number] = [plan.minGapMs, plan.maxGapMs];

    // One reader from the first message: it sees the agent's `ready`, then the rounds.
    const one = await openReader(server.url, server.apiKey, threadId, '0');
    const deadline = performance.now() + 30_000;
    while (one.created < 2 && performance.now() < deadline) await sleep(20);
    if (one.created < 2) throw new Error('bench:streams: the agent did not answer the first message within 30 s');
    takeFrames(one);
    f.lastSeq = 2;
    // Warm-up (not counted): the first turns compile the service's hot paths.
    for (let i = 0; i < 2; i += 1) await round(f, [one], 50, gap, noFigures(), false);

    const single = noFigures();
    for (let i = 0; i < plan.singleRounds; i += 1) await round(f, [one], plan.tokens, gap, single);
    log(
      `  ${backend}: one reader: per token p50 ${percentile(single.tokenMs, 50).toFixed(1)} / p99 ${percentile(single.tokenMs, 99).toFixed(1)} ms; ` +
        `per delta (newest token) p50 ${percentile(single.newestMs, 50).toFixed(1)} / p99 ${percentile(single.newestMs, 99).toFixed(1)} ms; ` +
        `${single.deltasPerReply.join(', ')} deltas per reply; lost ${single.lost}, repeated ${single.repeated}, mismatched ${single.mismatched}`,
    );
    const spaced = noFigures();
    await round(f, [one], plan.spacedTokens, plan.spacedGapMs, spaced);
    log(`  ${backend}: one reader, tokens ${plan.spacedGapMs.join('–')} ms apart: per token p50 ${percentile(spaced.tokenMs, 50).toFixed(1)} / p99 ${percentile(spaced.tokenMs, 99).toFixed(1)} ms`);
    one.close();

    const firstEventAlone: number[] = [];
    for (let i = 0; i < plan.aloneOpens; i += 1) {
      const reader = await openReader(server.url, server.apiKey, threadId, String(f.lastSeq - 1));
      firstEventAlone.push(reader.firstItemAt - reader.sentAt);
      reader.close();
      await sleep(50);
    }
    await sleep(500);

    // The readers open twice. The first time (not timed) the server's allocator and storage grow to
    // what an opening of that many needs: its RSS growth is what a process that never held them
    // pays. The second time, in room the process already holds, the growth is what the open
    // streams themselves hold.
    const cold = await serverMemory(server);
    const first = await openMany(f, plan.readers, String(f.lastSeq - 1));
    await sleep(2_000);
    const coldWith = await serverMemory(server);
    for (const reader of first) reader.close();
    await sleep(1_000);
    const before = await serverMemory(server);
    const opening = performance.now();
    const readers = await openMany(f, plan.readers, String(f.lastSeq - 1));
    const openAllSeconds = (performance.now() - opening) / 1000;
    const firstEventMany = readers.map((r) => r.firstItemAt - r.sentAt);
    log(
      `  ${backend}: ${plan.readers} readers opened at once in ${openAllSeconds.toFixed(2)} s; first event p50 ${percentile(firstEventMany, 50).toFixed(0)} / p99 ${percentile(firstEventMany, 99).toFixed(0)} ms ` +
        `(alone: median ${percentile(firstEventAlone, 50).toFixed(1)} ms)`,
    );
    await sleep(2_000);
    const withStreams = await serverMemory(server);
    for (const reader of readers) takeFrames(reader);
    const memory = { rssCold: cold.rss, rssColdWith: coldWith.rss, rssBefore: before.rss, rssWith: withStreams.rss, heapBefore: before.heapUsed, heapWith: withStreams.heapUsed };
    const kib = (bytes: number) => (bytes / plan.readers / 1024).toFixed(1);
    log(
      `  ${backend}: memory per open stream: heap ${kib(memory.heapWith - memory.heapBefore)} KiB, RSS ${kib(memory.rssWith - memory.rssBefore)} KiB ` +
        `(the first opening: RSS ${kib(memory.rssColdWith - memory.rssCold)} KiB)`,
    );

    const many = noFigures();
    try {
      // One warm-up reply with every reader (the fan-out's paths compiled), then the measured ones.
      await round(f, readers, 50, gap, noFigures(), false);
      for (let i = 0; i < plan.manyRounds; i += 1) await round(f, readers, plan.tokens, gap, many);
    } finally {
      for (const reader of readers) reader.close();
    }
    log(
      `  ${backend}: ${plan.readers} readers: per token p50 ${percentile(many.tokenMs, 50).toFixed(1)} / p99 ${percentile(many.tokenMs, 99).toFixed(1)} ms; ` +
        `per delta (newest token) p50 ${percentile(many.newestMs, 50).toFixed(1)} / p99 ${percentile(many.newestMs, 99).toFixed(1)} ms; lost ${many.lost}, repeated ${many.repeated}, mismatched ${many.mismatched}`,
    );
    return { backend, label, single, spaced, firstEventAlone, many, firstEventMany, openAllSeconds, readers: plan.readers, memory };
  } finally {
    client.destroy();
  }
}
