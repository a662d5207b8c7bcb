/**
 * The apply workflow on a real Temporal server. No server can be installed on the development
 * machines, so this suite runs only when TEMPORAL_ADDRESS is set and otherwise says it skipped.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApplyActivities } from '../../activities/apply-activities.ts';
import { loadDefinitionFile } from '../../definitions/load.ts';
import { applyWithTemporal } from '../../engine/temporal-engine.ts';
import type { DesiredState } from '../../plan/types.ts';
import { startServer } from '../../service/index.ts';

const address = process.env.TEMPORAL_ADDRESS;
const title = address ? 'temporal engine' : 'temporal engine (skipped: TEMPORAL_ADDRESS is not set; no Temporal server on this machine)';

describe.skipIf(!address)(title, () => {
  let server: Awaited<ReturnType<typeof startServer>>;
  let env: NodeJS.ProcessEnv;
  let stopWorker: () => Promise<void>;
  const taskQueue = `teamctl-test-${randomUUID()}`;
  const namespace = process.env.TEMPORAL_NAMESPACE || 'default';

  beforeAll(async () => {
    server = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false });
    const { api_key } = await server.provisionOrganization('temporal-tests');
    env = { ACS_TEST_KEY: api_key, ECHO_PROVIDER_KEY: 'temporal-echo-key' };
    Object.assign(process.env, env);
    const { NativeConnection, Worker } = await import('@temporalio/worker');
    const { workflowsPath } = await import('../../worker/worker.ts');
    const connection = await NativeConnection.connect({ address });
    const worker = await Worker.create({ connection, namespace, taskQueue, workflowsPath, activities: createApplyActivities({ env }) });
    const running = worker.run();
    stopWorker = async () => {
      worker.shutdown();
      await running;
      await connection.close();
    };
  }, 120_000);

  afterAll(async () => {
    await stopWorker?.();
    await server?.close();
  });

  it('temporal engine: the apply workflow creates the example, and a second run changes nothing', async () => {
    const example = (await loadDefinitionFile(new URL('../../examples/acme-research.yaml', import.meta.url).pathname)) as DesiredState;
    const desired = { ...example, organization: { ...example.organization, name: `acme-${randomUUID()}` } };
    const input = { connection: { baseUrl: server.url, apiKeyEnv: 'ACS_TEST_KEY' }, desired };
    const options = { address: address!, namespace, taskQueue };
    const first = await applyWithTemporal(input, options);
    expect(first.applied).toHaveLength(8);
    const second = await applyWithTemporal(input, options);
    expect(second.applied).toEqual([]);
  });
});
