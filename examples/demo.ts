/**
 * `npm run demo`: the first slice end to end, as a user would run it.
 *
 * Starts `acs-server` in memory on a free port, applies `examples/acme-research.yaml`, applies
 * it again (no changes), opens a thread from the human alice to the echo agent scout and prints
 * the reply; then applies `examples/triage.yaml` and runs its `triage` pipeline (a thread
 * continued, two steps in parallel) on the local engine; then applies `examples/desk.yaml` and
 * shows one delegation: dana asks the lead, whose turn asks the researcher and the writer over
 * its edges (the `ask` tool, scripted by the echo provider) and answers with both answers. Stops
 * the server and exits 0 — or exits 1 at the first step that fails.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const definition = join(root, 'examples', 'acme-research.yaml');
const pipelines = join(root, 'examples', 'triage.yaml');
const desk = join(root, 'examples', 'desk.yaml');

/** Runs a command to completion, streaming its output; resolves to its exit code. */
function run(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  // Quoted where a shell would need it, so the line can be pasted.
  console.log(`\n$ teamctl ${args.map((arg) => (/[\s"'$\\]/.test(arg) ? `$'${arg.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n')}'` : arg)).join(' ')}`);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(root, 'bin', 'teamctl.mjs'), ...args], { env, stdio: 'inherit' });
    child.on('error', reject);
    child.on('exit', (code) => resolve(code ?? 1));
  });
}

/** Waits for the server's dev-credentials file; fails if the server exits first. */
async function credentials(file: string, server: ReturnType<typeof spawn>): Promise<{ base_url: string; api_key: string }> {
  for (let i = 0; i < 300; i++) {
    if (server.exitCode !== null) throw new Error(`acs-server exited with code ${server.exitCode}`);
    try {
      return JSON.parse(await readFile(file, 'utf8'));
    } catch {
      await sleep(100);
    }
  }
  throw new Error('acs-server did not write its credentials within 30 s');
}

const dir = await mkdtemp(join(tmpdir(), 'teamctl-demo-'));
const credentialsFile = join(dir, 'dev-credentials.json');
console.log('$ acs-server start --in-memory --port 0 --tick-ms 200 --dev-credentials …');
const server = spawn(
  process.execPath,
  [join(root, 'bin', 'acs-server.mjs'), 'start', '--in-memory', '--port', '0', '--tick-ms', '200', '--dev-credentials', credentialsFile],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
// The server's JSON request logs would bury the demo's output: show only where it listens.
server.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
  for (const line of chunk.split('\n')) if (line.includes('listening on')) console.log(line);
});
let status = 1;
try {
  const creds = await credentials(credentialsFile, server);
  // The demo's provider key for the built-in echo provider; any non-empty value works.
  const env = { ...process.env, ACS_BASE_URL: creds.base_url, ACS_API_KEY: creds.api_key, ECHO_PROVIDER_KEY: 'demo-echo-provider-key' };
  const steps = [
    ['apply', '-f', definition],
    ['apply', '-f', definition],
    ['thread', 'open', '--team', 'literature-review', '--from', 'alice', '--to', 'scout',
      '--subject', 'Kickoff', '--content', 'Please find recent papers on durable execution.', '--wait', '60'],
    ['apply', '-f', pipelines],
    ['run', 'triage', '-f', pipelines, '--input', 'ticket=T-1042 printer on fire'],
    // Agents that act: the lead delegates to two specialists over its edges, no network needed.
    ['apply', '-f', desk],
    ['thread', 'open', '--team', 'desk', '--from', 'dana', '--to', 'lead', '--subject', 'T-2001',
      '--content', 'ask researcher: What do we know about durable execution?\nask writer: Draft a three-step plan to adopt it.', '--wait', '60'],
  ];
  status = 0;
  for (const step of steps) {
    const code = await run(step, env);
    if (code !== 0) {
      console.error(`demo: step failed with exit code ${code}: teamctl ${step.join(' ')}`);
      status = 1;
      break;
    }
  }
} catch (error) {
  console.error(`demo: ${error instanceof Error ? error.message : String(error)}`);
} finally {
  server.kill('SIGTERM');
  await new Promise((resolve) => (server.exitCode !== null ? resolve(null) : server.once('exit', resolve)));
  await rm(dir, { recursive: true, force: true });
}
console.log(status === 0 ? '\ndemo: done.' : '\ndemo: failed.');
process.exitCode = status;
