/**
 * `npm run soak` — a load-and-fault run of acs-server (issue 21): two `acs-server` processes on one
 * PostgreSQL database, a hundred clients for ten minutes mixing REST writes (with
 * Idempotency-Keys), conversations with long polls, MCP agents sending JSON-RPC batches, and
 * readers; a slow client trickling request bodies and a hostile one flooding from one address;
 * and `kill -9` of one process every two minutes (restarted at once on its port, while the clients
 * fail over to the other, as behind a load balancer). At the end it checks, against the
 * database, that no acknowledged write is missing and none is there twice, and reports the
 * latency of an unrelated GET under that load (sent from a process of its own, so that its figure
 * is the service's and not the load generator's event loop) and each process's memory.
 *
 * Then a fairness phase (issue 41, contract §14; soak/fairness.ts), with the load stopped: one
 * organization holds its bound of held waits (`--max-held-waits-per-org`) in event streams on
 * both processes while another organization's long polls are woken (their wake latency before and
 * during is reported, not judged), and a client fills its address's connection cap and opens more
 * connections, each sending a whole append at once: each must get one 429, and none of those
 * messages may be stored.
 *
 *   bash scripts/with-postgres.sh --install -- npm run soak                 # the full run, figures into docs/performance.md
 *   bash scripts/with-postgres.sh --install -- npm run soak -- --short      # CI: 90 s, 30 clients, a kill every 30 s
 *
 * Flags: `--duration S`, `--clients N`, `--kill-every S`, `--p99-ms MS` (default 50),
 * `--max-rss-mib MIB` (default 600), `--no-report`. The database is `SOAK_DATABASE_URL`, else
 * `ACS_POSTGRES_URL` (scripts/with-postgres.sh exports it); a fresh database is created on it and
 * dropped at the end. Exit status: 0 when every check held; 1 when a write was lost or doubled, a
 * long poll saw a message twice or out of order, memory passed its bound, an organization held more
 * than its bound of waits or another organization's long poll was not answered meanwhile, or a
 * connection past the cap was served or its write stored; with the full run also
 * when the p99 passed its bound (the short run reports it only: CI machines vary too much for a
 * timing bound, as the project's rule for tests says). 2 without a database.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { adminQuery, cpuModel, writeMarkedSection } from './host.ts';
import { startFleet, type Fleet } from './soak/fleet.ts';
import { loopbackAddress, sleep, SoakClient, type SoakReply } from './soak/http.ts';
import { fork } from 'node:child_process';
import type { ProbeResult, ProbeStart } from './soak/probe-process.ts';
import { conversation, hostile, Ledger, mcpAgent, reader, slowClient, writer, type Tenant } from './soak/traffic.ts';
import { connectionsPastTheCap, holdOrganizationsBound, wakeSamples, type WakeSamples } from './soak/fairness.ts';
import { defaultConnectionLimits } from '../service/http/connection-limits.ts';

const { values: flags } = parseArgs({
  options: {
    short: { type: 'boolean', default: false },
    duration: { type: 'string' },
    clients: { type: 'string' },
    'kill-every': { type: 'string' },
    'p99-ms': { type: 'string', default: '50' },
    'max-rss-mib': { type: 'string', default: '600' },
    'no-report': { type: 'boolean', default: false },
  },
});
const settings = {
  durationS: Number(flags.duration ?? (flags.short ? 90 : 600)),
  clients: Number(flags.clients ?? (flags.short ? 30 : 100)),
  killEveryS: Number(flags['kill-every'] ?? (flags.short ? 30 : 120)),
  p99Ms: Number(flags['p99-ms']),
  maxRssMiB: Number(flags['max-rss-mib']),
  // Per key and per minute: a client's writes stay well under it; the hostile client's do not.
  rateLimit: 3000,
  // The fairness phase: the greedy organization's bound of held waits in each process
  // (`--max-held-waits-per-org`, lowered from 2,000 so that the soak's machine holds it twice over),
  // the wake samples before and during, and the connections opened past the per-address cap.
  orgWaitBound: flags.short ? 100 : 400,
  wakeSamples: flags.short ? 40 : 200,
  pastTheCap: flags.short ? 20 : 50,
};
const log = (line: string) => process.stderr.write(`soak: ${line}\n`);

/** Fails unless `reply` has `status`; the soak's own setup must not go wrong quietly. */
function must(reply: SoakReply, status: number, what: string): any {
  if (reply.status !== status) throw new Error(`soak setup: ${what}: expected ${status}, got ${reply.failure ?? reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body;
}

/**
 * Runs the unrelated GET in a child process (soak/probe-process.ts) until `stop` aborts, then adds
 * its samples to `samples` and its answers to `ledger`. Errors: rejects when the child exits
 * without its result.
 */
function probeInItsOwnProcess(urls: readonly string[], sourceAddress: string, tenant: Tenant, samples: ProbeResult['samples'], ledger: Ledger, stop: AbortSignal): Promise<void> {
  const child = fork(join(import.meta.dirname, 'soak', 'probe-process.ts'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('message', (result: ProbeResult) => {
      samples.push(...result.samples);
      for (const [key, count] of result.outcomes) ledger.outcomes.set(key, (ledger.outcomes.get(key) ?? 0) + count);
      resolve();
    });
    child.once('exit', (code) => reject(new Error(`the probe process exited with ${code} before its result`)));
    child.send({ urls: [...urls], sourceAddress, tenant } satisfies ProbeStart);
    stop.addEventListener('abort', () => child.send('stop'), { once: true });
  });
}

/** One organization with its own key, a team, two participants on an edge and a thread; an MCP key when the peer is an agent. */
async function provision(dev: SoakClient, urls: () => readonly string[], index: number, peerKind: 'human' | 'agent'): Promise<Tenant> {
  const orgId = must(await dev.request('POST', '/organizations', { org_name: `soak ${index}` }), 201, 'organization').org_id as string;
  const apiKey = must(await dev.request('POST', `/organizations/${orgId}/keys`, { name: 'soak' }), 201, 'key').api_key as string;
  const client = new SoakClient(loopbackAddress(index), urls, apiKey);
  try {
    const teamId = must(await client.request('POST', `/organizations/${orgId}/teams`, { team_name: 'soak' }), 201, 'team').team_id as string;
    const writerId = must(await client.request('POST', `/teams/${teamId}/humans`, { name: 'writer' }), 201, 'writer').human_id as string;
    const peer = must(await client.request('POST', `/teams/${teamId}/${peerKind === 'agent' ? 'agents' : 'humans'}`, { name: 'peer' }), 201, 'peer');
    const peerId = (peer.agent_id ?? peer.human_id) as string;
    const edgeId = must(await client.request('POST', `/teams/${teamId}/edges`, { participants: [writerId, peerId] }), 201, 'edge').edge_id as string;
    const threadId = must(await client.request('POST', `/edges/${edgeId}/threads`, { sender_agent_id: writerId, content: `open ${index}` }), 201, 'thread').thread_id as string;
    const mcpKey = peerKind === 'agent' ? (must(await client.request('POST', `/agents/${peerId}/mcp-keys`), 201, 'MCP key').mcp_key as string) : undefined;
    return { index, orgId, apiKey, teamId, writer: writerId, peer: peerId, edgeId, threadId, ...(mcpKey ? { mcpKey } : {}) };
  } finally {
    client.close();
  }
}

/** Every message of a thread, oldest first (pages of 200). */
async function allMessages(client: SoakClient, threadId: string): Promise<Array<{ message_id: string; content: string }>> {
  const messages: Array<{ message_id: string; content: string }> = [];
  let after: string | null = null;
  for (;;) {
    const reply: SoakReply = await client.request('GET', `/threads/${threadId}?limit=200${after ? `&after=${after}` : ''}`);
    const page = must(reply, 200, `thread ${threadId}`);
    messages.push(...page.messages);
    if (!page.has_more) return messages;
    after = page.next_after;
  }
}

const percentile = (sorted: number[], p: number) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!);

async function main(): Promise<number> {
  const adminUrl = process.env.SOAK_DATABASE_URL || process.env.ACS_POSTGRES_URL;
  if (!adminUrl) {
    log('no PostgreSQL: run it as  bash scripts/with-postgres.sh --install -- npm run soak  (or set SOAK_DATABASE_URL)');
    return 2;
  }
  const dbName = `soak_${randomBytes(6).toString('hex')}`;
  await adminQuery(adminUrl, `CREATE DATABASE ${dbName}`);
  const databaseUrl = Object.assign(new URL(adminUrl), { pathname: `/${dbName}` }).toString();
  const work = await mkdtemp(join(os.tmpdir(), 'acs-soak-'));
  let fleet: Fleet | undefined;
  const clients: SoakClient[] = [];
  try {
    log(`${settings.clients} clients for ${settings.durationS} s against 2 processes, kill -9 every ${settings.killEveryS} s`);
    fleet = await startFleet({
      processes: 2,
      databaseUrl,
      dataDir: join(work, 'data'),
      // The soak's clients each come from their own loopback address; the cap per address stays the default.
      args: ['--rate-limit', String(settings.rateLimit), '--log-level', 'warn', '--tick-ms', '1000', '--max-held-waits-per-org', String(settings.orgWaitBound)],
      env: { ACS_ENCRYPTION_KEY: randomBytes(32).toString('hex'), ACS_AGENT_PROVIDERS: 'echo' },
      devCredentials: join(work, 'dev.json'),
    });
    const urls = () => fleet!.urls;
    const dev = new SoakClient('127.0.0.1', urls, (JSON.parse(await readFile(join(work, 'dev.json'), 'utf8')) as { api_key: string }).api_key);
    clients.push(dev);

    // Tenants: one per client, the probe's, the hostile one's, and the fairness phase's greedy,
    // fair and past-the-cap ones. Roles by index: 5 writers, 2 conversations, 2 MCP agents and 1
    // reader in every 10.
    const role = (i: number) => (['writer', 'writer', 'writer', 'writer', 'writer', 'conversation', 'conversation', 'mcp', 'mcp', 'reader'] as const)[i % 10]!;
    const tenants: Tenant[] = [];
    const started = Date.now();
    const extraTenants = 5;
    for (let i = 0; i < settings.clients + extraTenants; i += 8) {
      const batch = Array.from({ length: Math.min(8, settings.clients + extraTenants - i) }, (_, k) => i + k);
      tenants.push(...(await Promise.all(batch.map((n) => provision(dev, urls, n, n >= settings.clients || role(n) === 'mcp' ? 'agent' : 'human')))));
    }
    log(`provisioned ${tenants.length} tenants in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const probeTenant = tenants[settings.clients]!;
    const hostileTenant = tenants[settings.clients + 1]!;
    const [greedyTenant, fairTenant, pastTheCapTenant] = [tenants[settings.clients + 2]!, tenants[settings.clients + 3]!, tenants[settings.clients + 4]!];

    const ledger = new Ledger();
    const samples: Array<{ at: number; ms: number; ok: boolean }> = [];
    const kills: number[] = [];
    const stop = new AbortController();
    let graceUntil = Infinity;
    const grace = () => graceUntil;
    const client = (n: number, key: string | undefined, network = 10, maxSockets = 64) => {
      const made = new SoakClient(loopbackAddress(n, network), urls, key, n, maxSockets);
      clients.push(made);
      return made;
    };
    const loops: Array<Promise<void>> = [];
    for (const tenant of tenants.slice(0, settings.clients)) {
      const kind = role(tenant.index);
      if (kind === 'writer') loops.push(writer(client(tenant.index, tenant.apiKey), tenant, ledger, stop.signal, grace));
      else if (kind === 'conversation') loops.push(conversation(client(tenant.index, tenant.apiKey), client(tenant.index, tenant.apiKey, 11), tenant, ledger, stop.signal, grace));
      else if (kind === 'mcp') loops.push(mcpAgent(client(tenant.index, undefined), tenant, ledger, stop.signal));
      else loops.push(reader(client(tenant.index, tenant.apiKey), tenant, ledger, stop.signal));
    }
    const runStarted = Date.now();
    loops.push(probeInItsOwnProcess(urls(), loopbackAddress(0, 20), probeTenant, samples, ledger, stop.signal));
    loops.push(slowClient(urls, loopbackAddress(0, 21), ledger, stop.signal));
    loops.push(hostile(client(0, hostileTenant.apiKey, 22, 400), client(0, undefined, 22, 400), hostileTenant, ledger, stop.signal));

    // kill -9, one process after the other, until the end.
    const killing = (async () => {
      for (let k = 0; !stop.signal.aborted; k += 1) {
        const until = runStarted + (k + 1) * settings.killEveryS * 1000;
        while (!stop.signal.aborted && Date.now() < until) await sleep(250);
        if (stop.signal.aborted || Date.now() > runStarted + settings.durationS * 1000 - 5000) break;
        kills.push(Date.now());
        log(`kill -9 of process ${k % 2} at ${Math.round((Date.now() - runStarted) / 1000)} s`);
        await fleet!.killAndRestart(k % 2);
      }
    })();
    await sleep(settings.durationS * 1000);
    log('stopping the clients (unacknowledged writes get 30 s to be acknowledged)');
    graceUntil = Date.now() + 30_000;
    stop.abort();
    await killing;
    await Promise.race([Promise.all(loops), sleep(60_000)]);
    const runEnded = Date.now();

    // The fairness phase (soak/fairness.ts), with the load stopped and every process up.
    log(`fairness: ${settings.wakeSamples} long-poll wakes of one organization, then again while another holds its bound of ${settings.orgWaitBound} streams on each process`);
    const wakeClients = [client(0, fairTenant.apiKey, 42), client(1, fairTenant.apiKey, 42)] as const;
    const wakeBefore = await wakeSamples(wakeClients, fairTenant, settings.wakeSamples, 'wake-before');
    const greedyClient = client(0, greedyTenant.apiKey, 43);
    const greedyKeys = [greedyTenant.apiKey];
    for (let k = 1; k < 4; k += 1) greedyKeys.push(must(await greedyClient.request('POST', `/organizations/${greedyTenant.orgId}/keys`, { name: `greedy ${k}` }), 201, 'greedy key').api_key as string);
    const greedy = await holdOrganizationsBound(fleet.urls, greedyTenant.orgId, greedyKeys, settings.orgWaitBound, 5, 40);
    const wakeDuring = await wakeSamples(wakeClients, fairTenant, settings.wakeSamples, 'wake-during');
    greedy.close();
    log(`fairness: ${settings.pastTheCap} connections past the cap of ${defaultConnectionLimits.maxConnectionsPerClient} on each process, each with a whole append`);
    const pastTheCap = [];
    for (const [p, url] of fleet.urls.entries()) {
      pastTheCap.push(await connectionsPastTheCap(url, loopbackAddress(p, 41), defaultConnectionLimits.maxConnectionsPerClient, settings.pastTheCap, pastTheCapTenant, `past-the-cap-p${p}`));
    }
    const sentPastTheCap = new Set(pastTheCap.flatMap((o) => o.contents));
    const pastTheCapReader = client(settings.clients + 4, pastTheCapTenant.apiKey, 33);
    const storedPastTheCap = (await allMessages(pastTheCapReader, pastTheCapTenant.threadId)).filter((m) => sentPastTheCap.has(m.content)).length;

    // The check, against the database through the service.
    let lost = 0;
    let duplicates = 0;
    let acknowledged = 0;
    const lostExamples: string[] = [];
    for (const tenant of tenants) {
      if (tenant === hostileTenant) continue;
      const reading = new SoakClient(loopbackAddress(tenant.index, 31), urls, tenant.apiKey);
      clients.push(reading);
      const messages = await allMessages(reading, tenant.threadId);
      const ids = new Set(messages.map((m) => m.message_id));
      const byContent = new Map<string, number>();
      for (const m of messages) byContent.set(m.content, (byContent.get(m.content) ?? 0) + 1);
      for (const [content, count] of byContent) if (count > 1) duplicates += count - 1;
      for (const [content, id] of ledger.acknowledged.get(tenant.threadId) ?? []) {
        acknowledged += 1;
        if (!ids.has(id)) {
          lost += 1;
          if (lostExamples.length < 5) lostExamples.push(`${content} (${id})`);
        }
      }
    }
    let lostThreads = 0;
    for (const { threadId, tenant } of ledger.openedThreads) {
      acknowledged += 1;
      const reading = new SoakClient(loopbackAddress(tenant, 32), urls, tenants[tenant]!.apiKey);
      clients.push(reading);
      if ((await reading.request('GET', `/threads/${threadId}?limit=1`)).status !== 200) lostThreads += 1;
    }

    // Latency of the unrelated GET, past the first 10 s; "steady": also leaving out 5 s after each kill.
    const measured = samples.filter((s) => s.at > runStarted + 10_000 && s.at < runEnded && s.ok);
    const steady = measured.filter((s) => !kills.some((k) => s.at >= k && s.at < k + 5000));
    const sortedAll = measured.map((s) => s.ms).sort((a, b) => a - b);
    const sortedSteady = steady.map((s) => s.ms).sort((a, b) => a - b);
    const probeFailures = samples.filter((s) => !s.ok).length;
    const memory = fleet.lives.map((life) => {
      const half = Math.floor(life.rssMiB.length / 2);
      return {
        ...life,
        peak: Math.max(0, ...life.rssMiB),
        firstHalfPeak: Math.max(0, ...life.rssMiB.slice(0, half)),
        secondHalfPeak: Math.max(0, ...life.rssMiB.slice(half)),
        seconds: ((life.endedAt ?? runEnded) - life.startedAt) / 1000,
      };
    });
    const memoryOk = memory.every((m) => m.peak <= settings.maxRssMiB);
    const p99 = percentile(sortedSteady, 99);

    const wakeFigures = (w: WakeSamples) => {
      const sorted = [...w.ms].sort((a, b) => a - b);
      return { samples: w.ms.length, notServed: w.notServed.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.at(-1) ?? NaN };
    };
    const fairness = {
      orgWaitBound: settings.orgWaitBound,
      greedy: greedy.outcomes,
      wakeBefore: wakeFigures(wakeBefore),
      wakeDuring: wakeFigures(wakeDuring),
      pastTheCap: {
        connections: pastTheCap.reduce((n, o) => n + o.connections, 0),
        refused: pastTheCap.reduce((n, o) => n + o.refused, 0),
        served: pastTheCap.flatMap((o) => o.served),
        unanswered: pastTheCap.reduce((n, o) => n + o.unanswered, 0),
        stored: storedPastTheCap,
      },
    };

    const statuses = [...ledger.outcomes].sort(([a], [b]) => a.localeCompare(b));
    const figures = {
      date: new Date().toISOString().slice(0, 10),
      machine: `${cpuModel()}, ${os.cpus().length} cores, Node ${process.version}, load average at the end ${os.loadavg()[0]!.toFixed(1)}`,
      ...settings,
      kills: kills.length,
      acknowledged,
      lost: lost + lostThreads,
      duplicates,
      unacknowledged: ledger.unacknowledged,
      retries: ledger.retries,
      pollAnomalies: ledger.pollAnomalies.length,
      probe: { samples: measured.length, failures: probeFailures, p50: percentile(sortedAll, 50), p99All: percentile(sortedAll, 99), p99, max: sortedAll.at(-1) ?? NaN },
      memory: memory.map((m) => ({ slot: m.slot, seconds: Math.round(m.seconds), ended: m.ended ?? 'running', peak: Math.round(m.peak), firstHalfPeak: Math.round(m.firstHalfPeak), secondHalfPeak: Math.round(m.secondHalfPeak) })),
      fairness,
      statuses: Object.fromEntries(statuses),
    };
    process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
    if (lostExamples.length) log(`lost, e.g.: ${lostExamples.join(', ')}`);
    if (ledger.pollAnomalies.length) log(`long-poll anomalies, e.g.: ${ledger.pollAnomalies.slice(0, 5).join('; ')}`);
    const notServed = [...wakeBefore.notServed, ...wakeDuring.notServed];
    if (notServed.length) log(`long polls of the fair organization not served, e.g.: ${notServed.slice(0, 5).join('; ')}`);

    const failures: string[] = [];
    if (figures.lost > 0) failures.push(`${figures.lost} acknowledged writes lost`);
    if (duplicates > 0) failures.push(`${duplicates} duplicate messages`);
    if (ledger.pollAnomalies.length > 0) failures.push(`${ledger.pollAnomalies.length} long-poll anomalies`);
    if (!memoryOk) failures.push(`a process passed ${settings.maxRssMiB} MiB`);
    // The fairness phase: correctness, judged in every run; its wake latencies are reported only.
    const overBound = greedy.outcomes.filter((o) => o.held > settings.orgWaitBound).length;
    if (overBound > 0) failures.push(`the greedy organization held more than its bound of ${settings.orgWaitBound} waits on ${overBound} process(es)`);
    if (greedy.outcomes.every((o) => o.refused === 0)) failures.push('the greedy organization was never refused too_many_waits');
    if (notServed.length > 0) failures.push(`${notServed.length} long polls of another organization not answered with their message`);
    if (fairness.pastTheCap.served.length > 0) failures.push(`${fairness.pastTheCap.served.length} connections past the cap were served (${fairness.pastTheCap.served.slice(0, 5).join(', ')})`);
    if (storedPastTheCap > 0) failures.push(`${storedPastTheCap} writes sent on connections past the cap were stored`);
    const p99Verdict = p99 <= settings.p99Ms ? 'held' : `passed (${p99.toFixed(1)} ms)`;
    if (p99 > settings.p99Ms) {
      if (flags.short) log(`the unrelated GET's p99 bound of ${settings.p99Ms} ms ${p99Verdict}: reported, not judged, in the short run`);
      else failures.push(`p99 of the unrelated GET ${p99.toFixed(1)} ms > ${settings.p99Ms} ms`);
    }
    if (!flags.short && !flags['no-report']) await writeMarkedSection(join(import.meta.dirname, '..', 'docs', 'performance.md'), BEGIN, END, renderReport(figures), HEADING);
    log(
      `${acknowledged} acknowledged writes: ${figures.lost} lost, ${duplicates} duplicated; ${ledger.unacknowledged} never acknowledged; ${kills.length} kills; ` +
        `unrelated GET p50 ${figures.probe.p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms (steady), ${figures.probe.p99All.toFixed(1)} ms (all); ` +
        `peak RSS ${Math.max(...memory.map((m) => m.peak)).toFixed(0)} MiB`,
    );
    log(
      `fairness: the greedy organization held ${greedy.outcomes.map((o) => o.held).join(' + ')} streams (refused ${greedy.outcomes.map((o) => o.refused).join(' + ')}); ` +
        `the other's long-poll wake p50 / p99 ${fairness.wakeBefore.p50.toFixed(1)} / ${fairness.wakeBefore.p99.toFixed(1)} ms before, ` +
        `${fairness.wakeDuring.p50.toFixed(1)} / ${fairness.wakeDuring.p99.toFixed(1)} ms during (${notServed.length} not served); ` +
        `past the cap: ${fairness.pastTheCap.refused} of ${fairness.pastTheCap.connections} refused 429, ${fairness.pastTheCap.served.length} served, ${fairness.pastTheCap.unanswered} unanswered, ${storedPastTheCap} writes stored`,
    );
    process.stdout.write(failures.length === 0 ? 'soak: every check held\n' : `soak: FAILED: ${failures.join('; ')}\n`);
    return failures.length === 0 ? 0 : 1;
  } finally {
    for (const c of clients) c.close();
    await fleet?.stop().catch(() => {});
    await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => {});
    await rm(work, { recursive: true, force: true });
  }
}

const BEGIN = '<!-- soak:begin (generated by `npm run soak`; edit outside the markers) -->';
const END = '<!-- soak:end -->';
const HEADING = `## Soak: two processes, kill -9, a slow and a hostile client

\`npm run soak\` (bench/soak.ts; inside \`scripts/with-postgres.sh --install --\`) runs two
acs-server processes on one PostgreSQL database for ten minutes under a hundred clients, each
from its own loopback address and with its own organization key: REST writers (each write with an
Idempotency-Key, sent again to the other process when its answer was lost), conversations that
long-poll their thread while writing to it, external agents sending MCP batches (two
\`send_message\` and a \`read_thread\`) and waiting, and readers. A slow client trickles request
bodies; a hostile one, from one address, floods keyed GETs, MCP batches of 100 tool calls and
unauthenticated access requests. Every two minutes one process is killed with \`kill -9\` and
started again on its port. At the end every acknowledged write is looked up: none may be missing
and none may be there twice. Then, with the load stopped, a fairness phase: one organization holds
its bound of held waits (\`--max-held-waits-per-org\`, 400 here) in event streams on both processes
while another organization's long polls are woken (append through one process, poll held by the
other), and a client that holds its address's 128 connections opens 50 more, each sending a whole
append at once: each must be answered one 429, and none of those messages may be stored. CI runs
a short form (\`--short\`: 90 s, 30 clients, a kill every 30 s, a bound of 100) that judges the
writes, the long polls, memory and the fairness phase, and reports the latencies.`;

function renderReport(f: any): string {
  const n = (x: number, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : '–');
  const rows = [
    `Measured ${f.date} on ${f.machine}; the clients, both servers and PostgreSQL share the machine's cores.`,
    '',
    '| measurement | value |',
    '|---|---:|',
    `| clients, duration, kills | ${f.clients} clients, ${f.durationS} s, ${f.kills} × kill -9 |`,
    `| acknowledged writes (messages and threads) | ${f.acknowledged.toLocaleString('en-US')} |`,
    `| acknowledged writes lost | **${f.lost}** |`,
    `| duplicate messages | **${f.duplicates}** |`,
    `| writes never acknowledged (answer lost, not replayable in time) | ${f.unacknowledged} |`,
    `| writes sent again after a lost answer | ${f.retries} |`,
    `| long polls that saw a message twice or out of order | ${f.pollAnomalies} |`,
    `| unrelated GET under the hostile load: samples | ${f.probe.samples.toLocaleString('en-US')} (${f.probe.failures} failed, around the kills) |`,
    `| unrelated GET p50 / p99 (leaving out 5 s after each kill) / p99 (all) / max, ms | ${n(f.probe.p50)} / **${n(f.probe.p99)}** / ${n(f.probe.p99All)} / ${n(f.probe.max)} |`,
    `| fairness: the greedy organization's streams held / refused, per process (bound ${f.fairness.orgWaitBound}) | ${f.fairness.greedy.map((g: any) => `${g.held} / ${g.refused}`).join(', ')} |`,
    `| fairness: another organization's long-poll wake p50 / p99, ms, before / while the greedy one holds its bound | ${n(f.fairness.wakeBefore.p50)} / **${n(f.fairness.wakeBefore.p99)}** → ${n(f.fairness.wakeDuring.p50)} / **${n(f.fairness.wakeDuring.p99)}** (${f.fairness.wakeBefore.samples} + ${f.fairness.wakeDuring.samples} samples, ${f.fairness.wakeBefore.notServed + f.fairness.wakeDuring.notServed} not served) |`,
    `| connections past the per-address cap, each with a whole append: refused 429 / served / unanswered; writes stored | ${f.fairness.pastTheCap.refused} / ${f.fairness.pastTheCap.served.length} / ${f.fairness.pastTheCap.unanswered} of ${f.fairness.pastTheCap.connections}; **${f.fairness.pastTheCap.stored}** |`,
    ...f.memory.map(
      (m: any, i: number) =>
        `| process ${m.slot}, life ${i + 1} (${m.seconds} s, ended ${m.ended}): peak RSS, first half / second half, MiB | ${m.peak} (${m.firstHalfPeak} / ${m.secondHalfPeak}) |`,
    ),
  ];
  return rows.join('\n');
}

process.exitCode = await main().catch((error: unknown) => {
  log(String((error as Error).stack ?? error));
  return 1;
});
