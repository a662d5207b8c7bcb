import { fork, type ChildProcess } from 'node:child_process';
import { createClient, expectStatus, type BenchClient } from './client.ts';
import type { Command } from './server.ts';

/** One backend's figures; rates per second, latencies in milliseconds, memory in bytes. */
export interface BackendResult {
  backend: 'pglite' | 'postgres';
  appendsSequential: number;
  appendsConcurrent: number;
  appendsOneThread: number;
  seedSeconds: number;
  readsSequential: number;
  readsConcurrent: number;
  wakeP50: number;
  wakeP99: number;
  wakeSamples: number;
  held: number;
  /** Seconds it took to open and hold `held` polls (each costs one read on arrival). */
  heldSeconds: number;
  heldAnswered: number;
  rssPerPoll: number;
  heapPerPoll: number;
}

/** Durations and sizes of one run (defaults keep a whole run under ~10 minutes on 2 cores). */
export interface BenchPlan {
  seconds: number;
  clients: number;
  seedMessages: number;
  wakeSamples: number;
  held: number;
}

type ServerCommand = Command extends infer C ? (C extends { id: number } ? Omit<C, 'id'> : never) : never;

/** The server process of one backend, driven over IPC (see bench/server.ts). */
export interface ServerProcess {
  url: string;
  orgId: string;
  apiKey: string;
  send(command: ServerCommand): Promise<any>;
  stop(): Promise<void>;
}

/**
 * Forks bench/server.ts with `env` and waits until it listens. `BENCH_SERVER_ARGS` (space-separated
 * node options, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`) are added to the server process's.
 * Errors: rejects when it exits first.
 */
export async function startServerProcess(env: Record<string, string>): Promise<ServerProcess> {
  const extraArgs = (process.env.BENCH_SERVER_ARGS ?? '').split(' ').filter((arg) => arg !== '');
  const child: ChildProcess = fork(new URL('./server.ts', import.meta.url).pathname, [], {
    execArgv: ['--expose-gc', ...extraArgs],
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let nextId = 1;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ready = await new Promise<{ url: string; orgId: string; apiKey: string }>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`bench server exited with ${code} before it was ready`)));
    child.on('message', (message: any) => {
      if (message.type === 'ready') resolve(message);
      const waiter = pending.get(message.id);
      if (!waiter) return;
      pending.delete(message.id);
      if (message.type === 'done') waiter.resolve(message.result);
      else waiter.reject(new Error(message.error));
    });
  });
  return {
    ...ready,
    send(command) {
      const id = nextId++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        child.send({ ...command, id });
      });
    },
    async stop() {
      const id = nextId++;
      child.send({ type: 'close', id });
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

interface Fixture {
  client: BenchClient;
  teamId: string;
  ann: string;
  bob: string;
  edgeId: string;
  openThread(): Promise<{ threadId: string; firstId: string }>;
}

async function fixture(server: ServerProcess): Promise<Fixture> {
  const client = createClient(server.url, server.apiKey);
  const team = expectStatus(await client.call('POST', `/organizations/${server.orgId}/teams`, { team_name: 'bench' }), 201, 'create team');
  const teamId = team.body.team_id as string;
  // Two humans: no agent, so the agent loop writes nothing while we measure.
  const ann = expectStatus(await client.call('POST', `/teams/${teamId}/humans`, { name: 'ann' }), 201, 'create human').body.human_id as string;
  const bob = expectStatus(await client.call('POST', `/teams/${teamId}/humans`, { name: 'bob' }), 201, 'create human').body.human_id as string;
  const edge = expectStatus(await client.call('POST', `/teams/${teamId}/edges`, { participants: [ann, bob] }), 201, 'create edge');
  const edgeId = edge.body.edge_id as string;
  return {
    client,
    teamId,
    ann,
    bob,
    edgeId,
    async openThread() {
      const thread = expectStatus(await client.call('POST', `/edges/${edgeId}/threads`, { sender_agent_id: ann, content: 'start' }), 201, 'open thread');
      const page = await client.call('GET', `/threads/${thread.body.thread_id}`);
      return { threadId: thread.body.thread_id, firstId: page.body.messages[0].message_id };
    },
  };
}

/** Runs `work` in `workers` parallel loops for `seconds`; returns completed calls per second. */
async function rate(seconds: number, workers: number, work: (worker: number, i: number) => Promise<void>): Promise<number> {
  const deadline = performance.now() + seconds * 1000;
  const started = performance.now();
  let done = 0;
  await Promise.all(
    Array.from({ length: workers }, async (_, worker) => {
      for (let i = 0; performance.now() < deadline; i += 1) {
        await work(worker, i);
        done += 1;
      }
    }),
  );
  return done / ((performance.now() - started) / 1000);
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Measures one backend on a running server process: append rates, page reads at
 * `plan.seedMessages` messages in one thread, long-poll wake latency and memory per held poll.
 * `log` gets one line per finished measurement.
 */
export async function runBackend(backend: BackendResult['backend'], server: ServerProcess, plan: BenchPlan, log: (line: string) => void): Promise<BackendResult> {
  const f = await fixture(server);
  const { client } = f;
  const append = (threadId: string, sender: string, content: string) =>
    client.call('POST', `/threads/${threadId}/messages`, { sender_agent_id: sender, content }).then((r) => {
      expectStatus(r, 201, 'append');
    });

  // Warm-up: JIT, pool connections, caches.
  const warm = await f.openThread();
  await rate(2, 8, (w, i) => append(warm.threadId, w % 2 ? f.ann : f.bob, `warm ${i}`));
  const phases = (process.env.BENCH_PHASES ?? 'appends,reads,wake,memory').split(',');
  const result: BackendResult = {
    backend,
    appendsSequential: NaN,
    appendsConcurrent: NaN,
    appendsOneThread: NaN,
    seedSeconds: NaN,
    readsSequential: NaN,
    readsConcurrent: NaN,
    wakeP50: NaN,
    wakeP99: NaN,
    wakeSamples: 0,
    held: 0,
    heldSeconds: NaN,
    heldAnswered: NaN,
    rssPerPoll: NaN,
    heapPerPoll: NaN,
  };
  if (phases.includes('appends')) Object.assign(result, await appendRates(backend, f, plan, append, log));
  if (phases.includes('reads')) Object.assign(result, await readRates(backend, server, f, plan, log));
  if (phases.includes('wake')) Object.assign(result, await wakeLatency(backend, f, plan, append, log));
  if (phases.includes('memory')) Object.assign(result, await heldMemory(backend, server, f, plan, append, log));
  client.destroy();
  return result;
}

type Append = (threadId: string, sender: string, content: string) => Promise<void>;

async function appendRates(backend: string, f: Fixture, plan: BenchPlan, append: Append, log: (line: string) => void) {
  const one = await f.openThread();
  const appendsSequential = await rate(plan.seconds, 1, (_, i) => append(one.threadId, i % 2 ? f.ann : f.bob, `message ${i}`));
  log(`${backend}: appends, 1 client: ${appendsSequential.toFixed(0)}/s`);

  const threads = await Promise.all(Array.from({ length: plan.clients }, () => f.openThread()));
  const appendsConcurrent = await rate(plan.seconds, plan.clients, (w, i) => append(threads[w]!.threadId, i % 2 ? f.ann : f.bob, `message ${i}`));
  log(`${backend}: appends, ${plan.clients} clients on ${plan.clients} threads: ${appendsConcurrent.toFixed(0)}/s`);

  const shared = await f.openThread();
  const appendsOneThread = await rate(plan.seconds, plan.clients, (w, i) => append(shared.threadId, w % 2 ? f.ann : f.bob, `message ${i}`));
  log(`${backend}: appends, ${plan.clients} clients on one thread: ${appendsOneThread.toFixed(0)}/s`);
  return { appendsSequential, appendsConcurrent, appendsOneThread };
}

async function readRates(backend: string, server: ServerProcess, f: Fixture, plan: BenchPlan, log: (line: string) => void) {
  const { client } = f;

  const big = await f.openThread();
  const seedStart = performance.now();
  await server.send({ type: 'seed', threadId: big.threadId, senders: [f.ann, f.bob], count: plan.seedMessages });
  const seedSeconds = (performance.now() - seedStart) / 1000;
  log(`${backend}: seeded ${plan.seedMessages} messages in ${seedSeconds.toFixed(1)} s`);
  const cursors: string[] = await server.send({ type: 'sample-ids', threadId: big.threadId, count: 1000 });
  const read = async (i: number) => {
    const r = await client.call('GET', `/threads/${big.threadId}?after=${cursors[i % cursors.length]}&limit=50`);
    expectStatus(r, 200, 'read page');
  };
  const readsSequential = await rate(plan.seconds, 1, (_, i) => read(i));
  log(`${backend}: page reads (50 messages, ${plan.seedMessages} in the thread), 1 client: ${readsSequential.toFixed(1)}/s`);
  const readsConcurrent = await rate(plan.seconds, plan.clients, (w, i) => read(w * 7919 + i));
  log(`${backend}: page reads, ${plan.clients} clients: ${readsConcurrent.toFixed(1)}/s`);
  return { seedSeconds, readsSequential, readsConcurrent };
}

async function wakeLatency(backend: string, f: Fixture, plan: BenchPlan, append: Append, log: (line: string) => void) {
  const { client } = f;

  // Wake latency: from sending the append to the held poll's answer, one at a time.
  const waked = await f.openThread();
  let after = waked.firstId;
  const latencies: number[] = [];
  for (let i = 0; i < plan.wakeSamples; i += 1) {
    let answeredAt = 0;
    const held = client.call('GET', `/threads/${waked.threadId}?after=${after}&wait=30`).then((r) => {
      answeredAt = performance.now();
      return r;
    });
    await sleep(15); // let the poll reach the server and be held
    const sentAt = performance.now();
    await append(waked.threadId, i % 2 ? f.ann : f.bob, `wake ${i}`);
    const reply = await held;
    if (reply.body.messages.length !== 1) throw new Error('wake latency: the held poll did not answer with the new message');
    after = reply.body.next_after;
    latencies.push(answeredAt - sentAt);
  }
  latencies.sort((x, y) => x - y);
  const wakeP50 = percentile(latencies, 50);
  const wakeP99 = percentile(latencies, 99);
  log(`${backend}: long-poll wake latency p50 ${wakeP50.toFixed(2)} ms, p99 ${wakeP99.toFixed(2)} ms (${latencies.length} samples)`);
  return { wakeP50, wakeP99, wakeSamples: latencies.length };
}

async function heldMemory(backend: string, server: ServerProcess, f: Fixture, plan: BenchPlan, append: Append, log: (line: string) => void) {
  const { client } = f;

  // Memory per held poll: server RSS/heap after GC, before and while `plan.held` polls wait.
  const pollThreads = await Promise.all(Array.from({ length: 100 }, () => f.openThread()));
  const holder = createClient(server.url, server.apiKey);
  const before = await server.send({ type: 'memory' });
  const polls: Array<Promise<number>> = [];
  const failures = new Map<string, number>();
  const batch = 100;
  const openedAt = performance.now();
  // Polls are opened for at most 20 s so that none reaches its 30 s wait before the measurement;
  // a backend that cannot open plan.held in that time is measured at the number it reached.
  for (let i = 0; i < plan.held && performance.now() - openedAt < 20_000; i += batch) {
    for (let j = i; j < Math.min(plan.held, i + batch); j += 1) {
      const t = pollThreads[j % pollThreads.length]!;
      polls.push(
        holder.call('GET', `/threads/${t.threadId}?after=${t.firstId}&wait=30`).then(
          (r) => (r.status === 200 ? r.body.messages.length : -r.status),
          (error: unknown) => {
            failures.set(String((error as NodeJS.ErrnoException).code ?? error), (failures.get(String((error as NodeJS.ErrnoException).code ?? error)) ?? 0) + 1);
            return -1;
          },
        ),
      );
    }
    // Self-pacing: a read on a new connection is accepted after the batch's connections and
    // queues behind their first reads (FIFO accept queue, pool queue and PGlite queue), so when
    // it answers the batch is held. Flooding instead overflows the accept queue of a server
    // whose event loop is busy (PGlite runs on it) and connections get reset.
    const probe = createClient(server.url, server.apiKey);
    expectStatus(await probe.call('GET', `/threads/${pollThreads[0]!.threadId}`), 200, 'probe');
    probe.destroy();
  }
  const heldAfter = (performance.now() - openedAt) / 1000;
  await sleep(500);
  const during = await server.send({ type: 'memory' });
  const held = polls.length;
  await Promise.all(pollThreads.map((t) => append(t.threadId, f.bob, 'release')));
  const answers = await Promise.all(polls);
  const heldAnswered = answers.filter((n) => n > 0).length;
  if (heldAnswered < held) {
    const statuses = answers.filter((n) => n <= 0).reduce((m, n) => m.set(n, (m.get(n) ?? 0) + 1), new Map<number, number>());
    log(`${backend}: held polls not woken with the message: ${JSON.stringify([...statuses])} (0 = empty page, -N = HTTP N, -1 = error ${JSON.stringify([...failures])})`);
  }
  holder.destroy();
  const rssPerPoll = (during.rss - before.rss) / held;
  const heapPerPoll = (during.heapUsed - before.heapUsed) / held;
  log(
    `${backend}: ${held} held polls (opened in ${heldAfter.toFixed(1)} s): RSS +${((during.rss - before.rss) / 2 ** 20).toFixed(1)} MiB (${(rssPerPoll / 1024).toFixed(1)} KiB each), ` +
      `heap +${((during.heapUsed - before.heapUsed) / 2 ** 20).toFixed(1)} MiB (${(heapPerPoll / 1024).toFixed(1)} KiB each); ${heldAnswered} woken with the message`,
  );
  return { held, heldSeconds: heldAfter, heldAnswered, rssPerPoll, heapPerPoll };
}
