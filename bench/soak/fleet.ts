/**
 * The acs-server processes of the soak: N real `acs-server start` processes on one PostgreSQL
 * database, each on a fixed port (a restarted process comes back at the same address, as behind a
 * load balancer), killed with SIGKILL and restarted on a schedule, their memory sampled.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';

const root = join(import.meta.dirname, '../..');

/** One lifetime of one process: from its start to its kill (or the end of the run). */
export interface ProcessLife {
  slot: number;
  pid: number;
  startedAt: number;
  endedAt?: number;
  /** How it ended: `kill -9`, or stopped at the end. */
  ended?: 'SIGKILL' | 'SIGTERM';
  /** Resident memory samples, MiB, one every sampling period. */
  rssMiB: number[];
}

/** Settings of {@link startFleet}. */
export interface FleetOptions {
  processes: number;
  databaseUrl: string;
  dataDir: string;
  /** Extra arguments of `acs-server start` (rate limit, connection limits, log level). */
  args: string[];
  env: Record<string, string>;
  /** The first process provisions the dev organization and writes its key here. */
  devCredentials: string;
}

/** A running fleet. */
export interface Fleet {
  /** Base URLs, by slot (fixed for the run). */
  urls: readonly string[];
  lives: ProcessLife[];
  /** SIGKILLs the process in `slot` and starts it again on its port; resolves once it listens. */
  killAndRestart(slot: number): Promise<void>;
  /** Stops every process (SIGTERM, then SIGKILL after 10 s). */
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts `options.processes` processes one after the other (the first writes the dev credentials
 * the soak reads), samples each one's VmRSS every `sampleMs`, and returns the fleet.
 * Errors: rejects when a process exits before it listens (with its output).
 */
export async function startFleet(options: FleetOptions, sampleMs = 2000): Promise<Fleet> {
  const ports: number[] = [];
  for (let i = 0; i < options.processes; i += 1) ports.push(await freePort());
  const urls = ports.map((port) => `http://127.0.0.1:${port}`);
  const lives: ProcessLife[] = [];
  const children = new Map<number, { child: ChildProcess; life: ProcessLife; exited: Promise<void> }>();

  async function start(slot: number, first: boolean): Promise<void> {
    const args = [
      join(root, 'bin/acs-server.ts'), 'start', '--host', '127.0.0.1', '--port', String(ports[slot]),
      '--database-url', options.databaseUrl, '--data-dir', options.dataDir, ...options.args,
      ...(first ? ['--dev-credentials', options.devCredentials] : []),
    ];
    const child = spawn(join(root, 'node_modules/.bin/node'), args, { cwd: root, env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-20_000)));
    child.stderr!.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-20_000)));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    await new Promise<void>((resolve, reject) => {
      const look = () => {
        if (output.includes('acs-server listening on')) resolve();
      };
      child.stdout!.on('data', look);
      child.once('exit', (code) => reject(new Error(`acs-server in slot ${slot} exited with ${code} before listening:\n${output}`)));
    });
    const life: ProcessLife = { slot, pid: child.pid!, startedAt: Date.now(), rssMiB: [] };
    lives.push(life);
    children.set(slot, { child, life, exited });
  }

  for (let slot = 0; slot < options.processes; slot += 1) await start(slot, slot === 0);
  const sampler = setInterval(() => {
    for (const { life } of children.values()) {
      void readFile(`/proc/${life.pid}/status`, 'utf8').then(
        (status) => {
          const kib = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
          if (Number.isFinite(kib) && life.endedAt === undefined) life.rssMiB.push(kib / 1024);
        },
        () => undefined,
      );
    }
  }, sampleMs);

  return {
    urls,
    lives,
    async killAndRestart(slot) {
      const running = children.get(slot);
      if (running) {
        running.child.kill('SIGKILL');
        await running.exited;
        running.life.endedAt = Date.now();
        running.life.ended = 'SIGKILL';
        children.delete(slot);
      }
      await start(slot, false);
    },
    async stop() {
      clearInterval(sampler);
      await Promise.all(
        [...children.values()].map(async ({ child, life, exited }) => {
          child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
          await exited;
          clearTimeout(timer);
          life.endedAt = Date.now();
          life.ended = 'SIGTERM';
        }),
      );
      children.clear();
    },
  };
}
