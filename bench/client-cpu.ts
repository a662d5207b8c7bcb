/**
 * One HTTP client of `bench:apply`'s client CPU measurement, in a process of its own (forked by
 * bench/apply.ts with an IPC channel): it creates agents one by one in its team and reports the
 * CPU time this process spent doing so.
 *
 * Why a process per client: measured in the bench process, a client's CPU included whatever else
 * that process held or did — the Temporal worker's threads, and the garbage the floor's 32 clients
 * and the client measured before it left for the collector — so the same client measured 0.86–0.93
 * of the plain one alone and 1.08–1.19 of it there. Alone, each client pays for its own garbage
 * and its own JIT, and nothing else.
 *
 * Environment: `BENCH_CLIENT` (`node-http` | `acs-client` | `acs-client-fetch`, as in
 * {@link ClientCpu}), `BENCH_CLIENT_URL`, `BENCH_CLIENT_KEY` (the organization key),
 * `BENCH_CLIENT_TEAM` (the team to create agents in). Messages in: `{ id, count }` (send `count`
 * creates); out: `{ type: 'ready' }` once, then `{ id, micros }` per message: the process's user +
 * system CPU over those creates, in microseconds. The bodies are made before they are sent, so
 * the test data's cost is not the client's.
 */
import { AgentFields } from '../api/schemas.ts';
import { AcsClient } from '../client/acs-client.ts';
import type { ClientCpu } from './apply-report.ts';
import { createClient, expectStatus } from './client.ts';

const kind = process.env.BENCH_CLIENT as ClientCpu['client'];
const url = process.env.BENCH_CLIENT_URL!;
const key = process.env.BENCH_CLIENT_KEY!;
const team = process.env.BENCH_CLIENT_TEAM!;

let next = 0;
const body = () => AgentFields.toWire({ name: `agent-${next}`, description: `agent ${next++} of the client CPU measurement` });

/** Sends one create of an agent with `b` as its body, as the client measured does. */
const send: (b: ReturnType<typeof body>) => Promise<unknown> = (() => {
  if (kind === 'node-http') {
    const plain = createClient(url, key);
    return async (b) => expectStatus(await plain.call('POST', `/teams/${team}/agents`, b), 201, 'create agent').body;
  }
  const client = new AcsClient({ baseUrl: url, apiKey: key, ...(kind === 'acs-client-fetch' ? { fetch: globalThis.fetch } : {}) });
  return (b) => client.createAgent(team, b as Parameters<AcsClient['createAgent']>[1]);
})();

process.on('message', (message: { id: number; count: number }) => {
  void (async () => {
    const bodies = Array.from({ length: message.count }, body);
    const before = process.cpuUsage();
    for (const b of bodies) await send(b);
    const cpu = process.cpuUsage(before);
    process.send!({ id: message.id, micros: cpu.user + cpu.system });
  })().catch((error: unknown) => {
    process.send!({ id: message.id, error: String(error) });
  });
});
process.send!({ type: 'ready' });
