/**
 * The soak's unrelated GET (soak/traffic.ts, `probe`), in a process of its own: bench/soak.ts
 * forks it so that the latency it reports is the service's, not the wait of a request in an event
 * loop shared with a hundred other clients and the hostile one.
 *
 * IPC in: one {@link ProbeStart}, later any message to stop. IPC out: one {@link ProbeResult}, then
 * the process exits.
 */
import { SoakClient } from './http.ts';
import { Ledger, probe, type Tenant } from './traffic.ts';

/** What the probe needs: where the processes listen, its source address and its tenant. */
export interface ProbeStart {
  urls: string[];
  sourceAddress: string;
  tenant: Tenant;
}

/** What it measured: each GET's time, latency (ms) and success, and its answers by status. */
export interface ProbeResult {
  samples: Array<{ at: number; ms: number; ok: boolean }>;
  outcomes: Array<[string, number]>;
}

process.once('message', (start: ProbeStart) => {
  const client = new SoakClient(start.sourceAddress, () => start.urls, start.tenant.apiKey);
  const stop = new AbortController();
  process.once('message', () => stop.abort());
  // The soak is gone (it failed or was killed): nobody to report to.
  process.once('disconnect', () => process.exit(1));
  const samples: ProbeResult['samples'] = [];
  const ledger = new Ledger();
  void probe(client, start.tenant, samples, ledger, stop.signal).then(() => {
    client.close();
    const result: ProbeResult = { samples, outcomes: [...ledger.outcomes] };
    process.send!(result, () => process.exit(0));
  });
});
