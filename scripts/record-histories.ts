/**
 * `npm run histories:record`: records the histories that `test/workflows/replay.test.ts` replays
 * on every `npm test`, from a real Temporal server (started by scripts/with-temporal.sh) and an
 * in-memory acs-server. Each is written as `temporal workflow show -o json` prints it, to
 * test/workflows/histories/<name>.json. Run it after an intended change to a workflow, and keep
 * the old files of workflows that may still be running somewhere (replay must pass for both).
 *
 * Recorded: an apply that creates the example; the same apply again (a no-op); a synthetic apply
 * that continues as new (its first run); an apply that fails (an unset secret).
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { loadDefinitionFile } from '../definitions/load.ts';
import type { DesiredState } from '../plan/types.ts';
import { startServer } from '../service/index.ts';
import { loadTemporalSettings } from '../temporal/settings.ts';
import { syntheticDefinition } from '../test/support/synthetic.ts';
import { createWorker } from '../worker/worker.ts';
import type { ApplyInput } from '../workflows/apply-orchestration.ts';
import { applyWorkflow } from '../workflows/apply-workflow.ts';

const cli = process.env.TEMPORAL_CLI;
if (!process.env.TEMPORAL_ADDRESS || !cli) {
  process.stderr.write('record-histories: run it through scripts/with-temporal.sh --install -- npm run histories:record\n');
  process.exit(2);
}
const root = join(import.meta.dirname, '..');
const outDir = join(root, 'test/workflows/histories');
const settings = loadTemporalSettings(process.env);

const server = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false, rateLimit: false });
const { api_key } = await server.provisionOrganization('histories');
const env = { RECORD_KEY: api_key, ECHO_PROVIDER_KEY: 'recorded-echo-key' };
const taskQueue = `record-${randomUUID()}`;
const { worker, run } = await createWorker(settings, { taskQueue, activityDeps: { env } });
const running = run();
const connection = await Connection.connect(settings.connectionOptions as Parameters<typeof Connection.connect>[0]);
const client = new Client({ connection, namespace: settings.namespace });

const example = (await loadDefinitionFile(join(root, 'examples/acme-research.yaml'))) as DesiredState;
const input = (desired: DesiredState, extra: Partial<ApplyInput> = {}): ApplyInput => ({
  connection: { baseUrl: server.url, apiKeyEnv: 'RECORD_KEY' },
  desired,
  ...extra,
});

async function record(name: string, args: ApplyInput, expectFailure = false): Promise<void> {
  const workflowId = `teamctl-apply/${args.desired.organization.name}`;
  const handle = await client.workflow.start(applyWorkflow, { taskQueue, workflowId, args: [args] });
  try {
    await handle.result();
    if (expectFailure) throw new Error(`${name}: expected the workflow to fail`);
  } catch (error) {
    if (!expectFailure) throw error;
  }
  const json = execFileSync(cli!, ['workflow', 'show', '--workflow-id', workflowId, '--run-id', handle.firstExecutionRunId, '--address', settings.address, '--namespace', settings.namespace, '-o', 'json'], {
    maxBuffer: 64 << 20,
  }).toString();
  writeFileSync(join(outDir, `${name}.json`), `${JSON.stringify(JSON.parse(json), null, 1)}\n`);
  process.stdout.write(`recorded ${name} (${(JSON.parse(json) as { events: unknown[] }).events.length} events)\n`);
}

try {
  const org = { ...example, organization: { ...example.organization, name: 'recorded-example' } };
  await record('apply-example-create', input(org));
  await record('apply-example-no-op', input(org));
  await record('apply-continue-as-new', input(syntheticDefinition('recorded-large', { teams: 4, agents: 2, humans: 1, edges: 2 }), { historyEventLimit: 20 }));
  const unset = { ...example, organization: { name: 'recorded-failure', providerKeys: { echo: '${env:RECORD_UNSET_VARIABLE}' } } };
  await record('apply-fails-unresolved-secret', input(unset as DesiredState), true);
} finally {
  worker.shutdown();
  await running;
  await connection.close();
  await server.close();
}
