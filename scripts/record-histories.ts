/**
 * `npm run histories:record`: records the histories that `test/workflows/replay.test.ts` replays
 * on every `npm test`, from a real Temporal server (started by scripts/with-temporal.sh) and an
 * in-memory acs-server. Each is written as `temporal workflow show -o json` prints it, to
 * test/workflows/histories/<name>.json. Run it after an intended change to a workflow, and keep
 * the old files of workflows that may still be running somewhere (replay must pass for both).
 *
 * Recorded: an apply that creates the example; the same apply again (a no-op); an apply that
 * deletes (approved) and renames; the destroy of that organization; a synthetic apply that
 * continues as new (its first run); an apply that fails (an unset secret). Pipelines of
 * examples/triage.yaml: triage to completion (a continued thread, a parallel group), its first
 * run when it continues as new, the human-in-the-loop approval answered, and one cancelled while
 * it waits.
 *
 * `npm run histories:record -- NAME… [--suffix=S]` writes only the named histories (the others
 * still run when a named one needs their state), as NAME + S + `.json`: a changed workflow's new
 * recordings beside the old ones, which must keep replaying (`patched()`).
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { loadDefinitionFile } from '../definitions/load.ts';
import { desiredState } from '../plan/desired.ts';
import type { DesiredState } from '../plan/types.ts';
import { startServer } from '../service/index.ts';
import { loadTemporalSettings } from '../temporal/settings.ts';
import { syntheticDefinition, withOrganizationName } from '../test/support/synthetic.ts';
import { createWorker } from '../worker/worker.ts';
import { readFileSync } from 'node:fs';
import { AcsClient } from '../client/acs-client.ts';
import { parseDefinition } from '../definitions/load.ts';
import { createApplyActivities } from '../activities/apply-activities.ts';
import { applyLocally } from '../engine/local-engine.ts';
import type { ApplyInput } from '../workflows/apply-orchestration.ts';
import { applyWorkflow } from '../workflows/apply-workflow.ts';
import type { PipelineRunInput } from '../workflows/pipeline-orchestration.ts';
import { pipelineWorkflow, progressQuery } from '../workflows/pipeline-workflow.ts';
import type { WorkflowHandleWithFirstExecutionRunId as WorkflowHandle } from '@temporalio/client';

const cli = process.env.TEMPORAL_CLI;
if (!process.env.TEMPORAL_ADDRESS || !cli) {
  process.stderr.write('record-histories: run it through scripts/with-temporal.sh --install -- npm run histories:record\n');
  process.exit(2);
}
const root = join(import.meta.dirname, '..');
const args = process.argv.slice(2);
const suffix = args.find((a) => a.startsWith('--suffix='))?.slice('--suffix='.length) ?? '';
const only = args.filter((a) => !a.startsWith('--'));
/** Whether the history `name` is to be written. */
const wanted = (name: string) => only.length === 0 || only.includes(name);
const outDir = join(root, 'test/workflows/histories');
const settings = loadTemporalSettings(process.env);

// Echo agents answer the pipelines on the agent loop's tick.
const server = await startServer({ inMemory: true, port: 0, tickMs: 100, logger: false, rateLimit: false });
const { api_key } = await server.provisionOrganization('histories');
const env = { RECORD_KEY: api_key, ECHO_PROVIDER_KEY: 'recorded-echo-key' };
const taskQueue = `record-${randomUUID()}`;
const { worker, run } = await createWorker(settings, { taskQueue, activityDeps: { env } });
const running = run();
const connection = await Connection.connect(settings.connectionOptions as Parameters<typeof Connection.connect>[0]);
const client = new Client({ connection, namespace: settings.namespace });

const example = desiredState(await loadDefinitionFile(join(root, 'examples/acme-research.yaml')));
const input = (desired: DesiredState, extra: Partial<ApplyInput> = {}): ApplyInput => ({
  connection: { baseUrl: server.url, apiKeyEnv: 'RECORD_KEY' },
  desired,
  ...extra,
});

async function record(name: string, args: ApplyInput, expectFailure = false): Promise<void> {
  const workflowId = `teamctl-apply/${args.desired.organization.name}`;
  await save(name, await client.workflow.start(applyWorkflow, { taskQueue, workflowId, args: [args] }), expectFailure);
}

/** Waits for the run (failing or not, as expected) and writes its first run's history. */
async function save(name: string, handle: WorkflowHandle, expectFailure = false): Promise<void> {
  const workflowId = handle.workflowId;
  try {
    await handle.result();
    if (expectFailure) throw new Error(`${name}: expected the workflow to fail`);
  } catch (error) {
    if (!expectFailure) throw error;
  }
  if (!wanted(name)) return;
  const json = execFileSync(cli!, ['workflow', 'show', '--workflow-id', workflowId, '--run-id', handle.firstExecutionRunId, '--address', settings.address, '--namespace', settings.namespace, '-o', 'json'], {
    maxBuffer: 64 << 20,
  }).toString();
  writeFileSync(join(outDir, `${name}${suffix}.json`), `${JSON.stringify(JSON.parse(json), null, 1)}\n`);
  process.stdout.write(`recorded ${name}${suffix} (${(JSON.parse(json) as { events: unknown[] }).events.length} events)\n`);
}

try {
  const org = withOrganizationName(example, 'recorded-example');
  await record('apply-example-create', input(org));
  await record('apply-example-no-op', input(org));
  // Deletes (with consent), a rename, then the organization destroyed.
  const renamed = {
    ...org,
    teams: org.teams.map((t) => ({
      ...t,
      name: 'reviews',
      renamedFrom: t.name,
      fields: { ...t.fields, team_name: 'reviews' },
      agents: t.agents.filter((a) => a.name !== 'archivist'),
      edges: t.edges.filter((e) => !e.includes('archivist')),
    })),
  };
  await record('apply-deletes-and-rename', input(renamed, { approvedDeletes: 'all' }));
  await record('destroy-example', input(renamed, { destroy: true, approvedDeletes: 'all' }));
  await record('apply-continue-as-new', input(syntheticDefinition('recorded-large', { teams: 4, agents: 2, humans: 1, edges: 2 }), { historyEventLimit: 20 }));
  const failing = withOrganizationName(example, 'recorded-failure');
  const unset = { ...failing, organization: { ...failing.organization, providerKeys: [{ provider: 'echo' as const, secretRef: '${env:RECORD_UNSET_VARIABLE}' }] } };
  await record('apply-fails-unresolved-secret', input(unset), true);
  if (['pipeline-triage', 'pipeline-continue-as-new', 'pipeline-approval', 'pipeline-cancelled'].some(wanted)) await recordPipelines();
} finally {
  worker.shutdown();
  await running;
  await connection.close();
  await server.close();
}

/** The pipelines' histories (examples/triage.yaml applied first). */
async function recordPipelines(): Promise<void> {

  const triageFile = join(root, 'examples/triage.yaml');
  const triage = parseDefinition(readFileSync(triageFile, 'utf8').split('\nschedules:')[0]!.replace('name: acme-support', 'name: recorded-pipelines'), triageFile);
  await applyLocally(input(desiredState(triage)), createApplyActivities({ env }));
  const run = (pipeline: string, inputs: Record<string, string>, extra: Partial<PipelineRunInput> = {}): PipelineRunInput => ({
    connection: { baseUrl: server.url, apiKeyEnv: 'RECORD_KEY' },
    organization: 'recorded-pipelines',
    pipeline: triage.pipelines.find((p) => p.name === pipeline)!,
    inputs,
    ...extra,
  });
  const start = (id: string, args: PipelineRunInput) => client.workflow.start(pipelineWorkflow, { taskQueue, workflowId: `teamctl-run/recorded-pipelines/${id}`, args: [args] });
  await save('pipeline-triage', await start('triage', run('triage', { ticket: 'T-1' })));
  await save('pipeline-continue-as-new', await start('triage-continued', run('triage', { ticket: 'T-2' }, { historyEventLimit: 8 })));

  // The human's answer (and the cancellation) come once the step waits, as the progress query shows.
  const acs = new AcsClient({ baseUrl: server.url, apiKey: api_key });
  const waitingThread = async (handle: WorkflowHandle, stepId: string): Promise<string> => {
    for (;;) {
      const progress = await handle.query(progressQuery).catch(() => undefined);
      const step = progress?.steps.find((s) => s.id === stepId);
      if (step?.status === 'running') {
        const org = (await acs.listOrganizations()).find((o) => o.org_name === 'recorded-pipelines')!;
        const team = (await acs.listTeams(org.org_id))[0]!;
        const graph = await acs.getTeam(team.team_id);
        const dana = graph.humans.find((h) => h.name === 'dana')!.human_id;
        for (const edge of graph.edges) {
          for (const thread of await acs.listThreads(edge.edge_id)) {
            const page = await acs.getThread(thread.thread_id, { limit: 200 });
            if (page.messages.some((m) => m.content.includes(`roll out ${handle.workflowId.split('/').at(-1)}`))) return `${thread.thread_id}\u0000${dana}`;
          }
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };
  const approval = await start('approval', run('approval', { change: 'approval' }));
  const [threadId, dana] = (await waitingThread(approval, 'ask')).split('\u0000') as [string, string];
  await acs.appendMessage(threadId, { sender_agent_id: dana, content: 'approved' });
  await save('pipeline-approval', approval);
  const cancelled = await start('cancelled', run('approval', { change: 'cancelled' }));
  await waitingThread(cancelled, 'ask');
  await cancelled.cancel();
  await save('pipeline-cancelled', cancelled, true);
}
