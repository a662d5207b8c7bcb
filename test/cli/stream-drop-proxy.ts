/**
 * A loopback TCP proxy in front of a real acs-server that cuts a thread's stream when a test says
 * so, as a flaky network or a restarting load balancer would: it relays bytes both ways, notes
 * which connections carry a `GET …/threads/{id}/stream` (and the `Last-Event-ID` each such request
 * resumed from), counts the `message.delta` frames relayed to the client, and `dropStreams()`
 * destroys those connections mid-stream. Everything else passes untouched (test/support's fault
 * proxy buffers whole answers, which a stream never ends).
 */
import { connect, createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/** A running proxy. */
export interface StreamDropProxy {
  /** Base URL to give the client instead of the server's. */
  url: string;
  /** The `Last-Event-ID` of each thread-stream request, in order (`null`: a request without one). */
  streamRequests: Array<string | null>;
  /** `message.delta` frames relayed to clients so far. */
  deltas(): number;
  /** Cuts every connection carrying a thread's stream now. Output: how many were cut. */
  dropStreams(): number;
  close(): Promise<void>;
}

/** Starts the proxy on a free loopback port, in front of `target` (`http://127.0.0.1:PORT`). */
export async function startStreamDropProxy(target: string): Promise<StreamDropProxy> {
  const { hostname, port } = new URL(target);
  const streams = new Set<Socket>();
  const all = new Set<Socket>();
  const streamRequests: Array<string | null> = [];
  let deltas = 0;
  const server = createServer((client) => {
    const upstream = connect(Number(port), hostname);
    all.add(client);
    all.add(upstream);
    client.on('data', (chunk: Buffer) => {
      const text = chunk.toString('latin1');
      // A keep-alive connection may carry JSON requests first and the stream after them.
      if (/^GET \S*\/threads\/[^/\s]+\/stream\S* HTTP\/1\.1/m.test(text)) {
        streams.add(client);
        streamRequests.push(/^last-event-id:\s*(\S+)/im.exec(text)?.[1] ?? null);
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (streams.has(client)) deltas += chunk.toString('utf8').match(/^event: message\.delta$/gm)?.length ?? 0;
      client.write(chunk);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
      streams.delete(client);
      all.delete(client);
      all.delete(upstream);
    };
    client.on('close', end);
    upstream.on('close', end);
    client.on('error', end);
    upstream.on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    streamRequests,
    deltas: () => deltas,
    dropStreams() {
      const cut = [...streams];
      for (const socket of cut) socket.destroy();
      return cut.length;
    },
    async close() {
      for (const socket of all) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
