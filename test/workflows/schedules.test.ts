/**
 * Scheduled pipeline runs on a real Temporal server and a real acs-server with an echo agent:
 * apply makes a definition's schedules Temporal Schedules (checked with the official CLI), plan
 * sees them in sync, a trigger runs the pipeline to completion on an in-process worker, pause and
 * unpause hold until the next apply, a change updates and a removal deletes, and with no
 * reachable Temporal apply changes nothing at all.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AcsClient } from '../../client/acs-client.ts';
import { runCli } from '../../cli/program.ts';
import { parseDefinition } from '../../definitions/load.ts';
import type { ScheduleChange } from '../../plan/schedules.ts';
import { startServer } from '../../service/index.ts';
import type { PipelineResult } from '../../workflows/pipeline-orchestration.ts';
import { connectTestClient, describeTemporal, startWorker, testSettings } from '../support/temporal.ts';

const ECHO_KEY = 'schedules-echo-provider-secret-3b9e';
const example = new URL('../../examples/nightly-triage.yaml', import.meta.url);

describeTemporal('schedules', () => {
  let server: Awaited<ReturnType<typeof startServer>>;
  let apiKey: string;
  let temporal: Client;
  let closeTemporal: (() => Promise<void>) | undefined;
  let taskQueue: string;
  const stops: Array<() => Promise<void>> = [];

  /** The example under a fresh organization name, written to a file; `edit` changes its text. */
  async function definitionFile(edit: (text: string) => string = (t) => t): Promise<{ org: string; file: string; write(edit: (text: string) => string): Promise<void> }> {
    const org = `schedules-${randomUUID()}`;
    const original = (await readFile(example, 'utf8')).replace('name: acme-nightly', `name: ${org}`);
    const file = join(await mkdtemp(join(tmpdir(), 'teamctl-schedules-')), 'nightly.yaml');
    await writeFile(file, edit(original));
    return { org, file, write: (change) => writeFile(file, change(original)) };
  }

  /** Runs teamctl in-process against the test server, Temporal and task queue; `env` overrides. */
  async function teamctl(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
    const out: string[] = [];
    const err: string[] = [];
    const io = {
      env: { ...process.env, ACS_BASE_URL: server.url, ACS_API_KEY: apiKey, ECHO_PROVIDER_KEY: ECHO_KEY, ...env },
      isTTY: false,
      stdout: (t: string) => void out.push(t),
      stderr: (t: string) => void err.push(t),
    };
    const code = await runCli(args, io);
    return { code, stdout: out.join('\n'), stderr: err.join('\n') };
  }

  /** `apply` (or `plan --json`) with the worker's task queue; fails the test on a non-zero exit. */
  async function apply(file: string, ...flags: string[]): Promise<string> {
    const result = await teamctl(['apply', '-f', file, '--task-queue', taskQueue, ...flags]);
    expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
    return result.stdout;
  }
  async function plan(file: string): Promise<{ code: number; changes: unknown[]; schedules: ScheduleChange[] }> {
    const result = await teamctl(['plan', '-f', file, '--task-queue', taskQueue, '--json', '--detailed-exitcode']);
    expect(result.code, result.stderr).not.toBe(1);
    return { code: result.code, ...(JSON.parse(result.stdout) as { changes: unknown[]; schedules: ScheduleChange[] }) };
  }

  /** The schedule as the official Temporal CLI describes it (JSON), or its error output. */
  async function cliDescribe(id: string): Promise<{ ok: true; json: any } | { ok: false; stderr: string }> {
    try {
      const { stdout } = await promisify(execFile)(process.env.TEMPORAL_CLI ?? 'temporal', [
        'schedule', 'describe', '--schedule-id', id, '--address', process.env.TEMPORAL_ADDRESS!, '--namespace', testSettings().namespace, '-o', 'json',
      ]);
      return { ok: true, json: JSON.parse(stdout) };
    } catch (error) {
      return { ok: false, stderr: String((error as { stderr?: string }).stderr ?? error) };
    }
  }

  /** The first pipelineWorkflow whose id starts with `prefix`, once visibility lists it. */
  async function firstRun(prefix: string): Promise<string> {
    for (;;) {
      for await (const info of temporal.workflow.list({ query: `WorkflowType = 'pipelineWorkflow' AND WorkflowId STARTS_WITH '${prefix}'` })) return info.workflowId;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  beforeAll(async () => {
    // Echo agents reply on the agent loop's tick.
    server = await startServer({ inMemory: true, port: 0, tickMs: 100, logger: false, rateLimit: false });
    apiKey = (await server.provisionOrganization('schedules-tests')).api_key;
    ({ client: temporal, close: closeTemporal } = await connectTestClient());
    taskQueue = `schedules-test-${randomUUID()}`;
    const worker = await startWorker(taskQueue, { env: { ACS_API_KEY: apiKey, ECHO_PROVIDER_KEY: ECHO_KEY } });
    stops.push(() => worker.stop());
  }, 120_000);

  afterAll(async () => {
    for (const stop of stops.reverse()) await stop();
    await closeTemporal?.();
    await server?.close();
  }, 120_000);

  it('schedules: apply creates the definition\'s schedule on Temporal as the file says it, and plan then shows no change', async () => {
    const { org, file } = await definitionFile();
    const before = await plan(file);
    expect(before.code).toBe(2);
    expect(before.schedules).toEqual([expect.objectContaining({ action: 'create', name: 'nightly-triage', id: `teamctl/${org}/nightly-triage` })]);

    const output = await apply(file);
    expect(output).toContain('  schedule/nightly-triage: created');
    expect(output).toContain('Apply complete: 7 created, 0 updated, 0 deleted, 0 already in place.');

    const described = await cliDescribe(`teamctl/${org}/nightly-triage`);
    if (!described.ok) throw new Error(described.stderr);
    const schedule = described.json.schedule;
    expect(schedule.spec.timezoneName).toBe('Europe/Berlin');
    expect(schedule.action.startWorkflow).toMatchObject({ workflowId: `teamctl-run/${org}/nightly-triage`, workflowType: { name: 'pipelineWorkflow' }, taskQueue: { name: taskQueue } });
    expect(schedule.policies).toMatchObject({ overlapPolicy: 'SCHEDULE_OVERLAP_POLICY_SKIP', catchupWindow: '3600s' });
    expect(schedule.state.paused ?? false).toBe(false);
    // 02:00 in Berlin is 01:00 UTC in winter, 00:00 UTC in summer.
    expect(described.json.info.futureActionTimes[0]).toMatch(/T0[01]:00:00Z$/);
    // The run's input holds secret references only.
    const input = Buffer.from(schedule.action.startWorkflow.input.payloads[0].data, 'base64').toString('utf8');
    expect(input).toContain('"apiKeyEnv":"ACS_API_KEY"');
    expect(input).not.toContain(apiKey);
    expect(input).not.toContain(ECHO_KEY);

    expect(await plan(file)).toEqual({ code: 0, changes: [], schedules: [] });
    expect(await apply(file)).toContain('No changes.');
  });

  it('export: with Temporal configured, the schedules and the pipelines they run are exported (a paused one paused), and plan on the export shows no change', async () => {
    const { org, file } = await definitionFile();
    await apply(file);
    const paused = await teamctl(['schedules', 'pause', 'nightly-triage', '--org', org]);
    expect(paused.code, paused.stderr).toBe(0);

    const exported = await teamctl(['export', '--org', org]);
    expect(exported.code, exported.stderr).toBe(0);
    // Its runs go to the test's task queue, not the default: the export says how to plan it.
    expect(exported.stdout).toContain(`plan and apply it with --task-queue ${taskQueue}`);
    const definition = parseDefinition(exported.stdout, 'export');
    const original = parseDefinition(await readFile(file, 'utf8'), 'original');
    expect(definition.schedules).toEqual([{ ...original.schedules[0], paused: true }]);
    expect(definition.pipelines).toEqual(original.pipelines.filter((p) => p.name === original.schedules[0]!.pipeline));

    const copy = join(await mkdtemp(join(tmpdir(), 'teamctl-export-')), 'exported.yaml');
    await writeFile(copy, exported.stdout);
    expect(await plan(copy)).toEqual({ code: 0, changes: [], schedules: [] });
  });

  it('schedules: list and describe show the schedule with its next runs in its own time zone', async () => {
    const { org, file } = await definitionFile();
    await apply(file);
    const listed = await teamctl(['schedules', 'list', '-f', file]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/^nightly-triage {2}active {2}cron 0 2 \* \* \* \(Europe\/Berlin\) {2}pipeline sweep {2}next \d{4}-\d{2}-\d{2} 02:00:00 GMT\+[12]$/);

    const described = await teamctl(['schedules', 'describe', 'nightly-triage', '--org', org, '--json']);
    expect(described.code, described.stderr).toBe(0);
    const view = JSON.parse(described.stdout) as { paused: boolean; pipeline: string; timezone: string; overlap: string; catchup_window: string; inputs: unknown; next_runs_local: string[]; managed: boolean };
    expect(view).toMatchObject({ paused: false, pipeline: 'sweep', timezone: 'Europe/Berlin', overlap: 'skip', catchup_window: '1h', inputs: { ticket: 'nightly sweep' }, managed: true });
    expect(view.next_runs_local.every((t) => t.includes(' 02:00:00 '))).toBe(true);
  });

  it('schedules: trigger starts a run of the pipeline, even while paused, that completes with the echo agent\'s reply', async () => {
    const { org, file } = await definitionFile((t) => t.replace('paused: false', 'paused: true'));
    await apply(file);
    // Paused once, on its list line: no next run after it.
    expect((await teamctl(['schedules', 'list', '-f', file])).stdout).toMatch(/^nightly-triage {2}paused {2}cron 0 2 \* \* \* \(Europe\/Berlin\) {2}pipeline sweep$/);
    const triggered = await teamctl(['schedules', 'trigger', 'nightly-triage', '-f', file]);
    expect(triggered.code, triggered.stderr).toBe(0);
    expect(triggered.stdout).toContain(`starts as teamctl-run/${org}/nightly-triage-<time>`);

    const runId = await firstRun(`teamctl-run/${org}/nightly-triage-`);
    const result = (await temporal.workflow.getHandle(runId).result()) as PipelineResult;
    expect(result).toMatchObject({ status: 'completed', output: 'echo: Classify (low): nightly sweep' });
    const runs = await teamctl(['runs', 'list', '--org', org, '--json']);
    expect(JSON.parse(runs.stdout).runs).toEqual([expect.objectContaining({ run_id: runId, status: 'completed' })]);
  });

  it('schedules: pause and unpause change its state with a note, and the next apply sets it back as the file says', async () => {
    const { org, file } = await definitionFile();
    await apply(file);
    const id = `teamctl/${org}/nightly-triage`;

    const paused = await teamctl(['schedules', 'pause', 'nightly-triage', '-f', file, '--note', 'holiday']);
    expect(paused.code, paused.stderr).toBe(0);
    expect(paused.stderr).toContain('says paused: false; the next apply of it unpauses the schedule again');
    const cli = await cliDescribe(id);
    expect(cli.ok && cli.json.schedule.state).toMatchObject({ paused: true, notes: 'holiday' });
    const shown = JSON.parse((await teamctl(['schedules', 'describe', 'nightly-triage', '-f', file, '--json'])).stdout) as { paused: boolean; note: string };
    expect(shown).toMatchObject({ paused: true, note: 'holiday' });

    const unpaused = await teamctl(['schedules', 'unpause', 'nightly-triage', '--org', org]);
    expect(unpaused.code, unpaused.stderr).toBe(0);
    const after = await cliDescribe(id);
    expect(after.ok && (after.json.schedule.state.paused ?? false)).toBe(false);

    // Paused by hand again: the plan shows the way back, and apply takes it.
    expect((await teamctl(['schedules', 'pause', 'nightly-triage', '--org', org])).code).toBe(0);
    const drifted = await plan(file);
    expect(drifted.code).toBe(2);
    expect(drifted.schedules).toEqual([{ action: 'update', kind: 'schedule', name: 'nightly-triage', address: 'schedule/nightly-triage', id, diff: { paused: { from: true, to: false } } }]);
    expect(await apply(file)).toContain('  schedule/nightly-triage: updated');
    const restored = await cliDescribe(id);
    expect(restored.ok && (restored.json.schedule.state.paused ?? false)).toBe(false);
  });

  it('schedules: a schedule changed in the file is an update in plan, and apply updates it on Temporal', async () => {
    const { org, file, write } = await definitionFile();
    await apply(file);
    await write((t) => t.replace('cron: "0 2 * * *"', 'cron: "30 3 * * 1-5"').replace('overlap: skip', 'overlap: buffer_one').replace('paused: false', 'paused: true'));

    const planned = await plan(file);
    expect(planned.code).toBe(2);
    expect(planned.changes).toEqual([]);
    expect(planned.schedules).toEqual([
      {
        action: 'update',
        kind: 'schedule',
        name: 'nightly-triage',
        address: 'schedule/nightly-triage',
        id: `teamctl/${org}/nightly-triage`,
        diff: { cron: { from: '0 2 * * *', to: '30 3 * * 1-5' }, overlap: { from: 'skip', to: 'buffer_one' }, paused: { from: false, to: true } },
      },
    ]);
    const text = await teamctl(['plan', '-f', file, '--task-queue', taskQueue]);
    expect(text.stdout).toContain('  ~ update schedule/nightly-triage\n      cron: "0 2 * * *" -> "30 3 * * 1-5"');
    expect(text.stdout).toContain('Plan: 0 to create, 1 to update, 0 to delete.');

    expect(await apply(file)).toContain('  schedule/nightly-triage: updated');
    const described = await cliDescribe(`teamctl/${org}/nightly-triage`);
    if (!described.ok) throw new Error(described.stderr);
    expect(described.json.schedule.policies.overlapPolicy).toBe('SCHEDULE_OVERLAP_POLICY_BUFFER_ONE');
    expect(described.json.schedule.state.paused).toBe(true);
    expect(described.json.schedule.spec.structuredCalendar[0].minute).toEqual([{ start: 30, end: 30, step: 1 }]);
    expect((await plan(file)).code).toBe(0);
  });

  it('schedules: a schedule removed from the file is a delete in plan, which apply makes only with consent, as any delete', async () => {
    const { org, file, write } = await definitionFile();
    await apply(file);
    const id = `teamctl/${org}/nightly-triage`;
    // The plan finds schedules no longer in the file through Temporal's (eventually consistent) list.
    for (;;) {
      const listed = [];
      for await (const s of temporal.schedule.list({ query: `ScheduleId STARTS_WITH 'teamctl/${org}/'` })) listed.push(s.scheduleId);
      if (listed.includes(id)) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await write((t) => t.split('\nschedules:')[0]!);

    const planned = await plan(file);
    expect(planned).toEqual({ code: 2, changes: [], schedules: [{ action: 'delete', kind: 'schedule', name: 'nightly-triage', address: 'schedule/nightly-triage', id }] });
    expect((await teamctl(['plan', '-f', file, '--task-queue', taskQueue])).stdout).toContain(`  - delete schedule/nightly-triage (${id})`);

    // No terminal and no --auto-approve: refused, and the schedule is still there.
    const refused = await teamctl(['apply', '-f', file, '--task-queue', taskQueue]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('error[not_approved]: the plan deletes 1 resource (schedule/nightly-triage)');
    expect((await cliDescribe(id)).ok).toBe(true);

    const output = await apply(file, '--auto-approve');
    expect(output).toContain('  schedule/nightly-triage: deleted');
    const described = await cliDescribe(id);
    expect(described.ok).toBe(false);
    expect(!described.ok && described.stderr).toMatch(/not found/i);
  });

  it('schedules: an unknown name is schedule_not_found with a did-you-mean, and backfill checks its times before calling Temporal', async () => {
    const { org, file } = await definitionFile();
    await apply(file);
    const unknown = await teamctl(['schedules', 'trigger', 'nightly-triag', '--org', org]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain(`error[schedule_not_found]: organization "${org}" has no schedule named "nightly-triag" on Temporal (did you mean "nightly-triage"?)`);
    expect(unknown.stderr).toContain('hint: list schedules with: teamctl schedules list');

    const local = await teamctl(['schedules', 'backfill', 'nightly-triage', '-f', file, '--from', '2026-11-01T02:00', '--to', '2026-11-02']);
    expect(local.code).toBe(1);
    expect(local.stderr).toContain('error[invalid_usage]: --from: not an ISO 8601 time (add Z or an offset such as +01:00)');
    const backwards = await teamctl(['schedules', 'backfill', 'nightly-triage', '-f', file, '--from', '2026-11-02', '--to', '2026-11-01']);
    expect(backwards.stderr).toContain('error[invalid_usage]: --to (2026-11-01) must be after --from (2026-11-02)');
    const noOrg = await teamctl(['schedules', 'list']);
    expect(noOrg.stderr).toContain('error[invalid_usage]: name the organization');

    // A backfill over a window with no due time is accepted and starts nothing.
    const empty = await teamctl(['schedules', 'backfill', 'nightly-triage', '-f', file, '--from', '2026-01-01T03:00:00+01:00', '--to', '2026-01-01T04:00:00+01:00']);
    expect(empty.code, empty.stderr).toBe(0);
    expect(empty.stdout).toContain('from 2026-01-01 03:00:00 GMT+1 to 2026-01-01 04:00:00 GMT+1');
  });

  it('schedules: with schedules in the file and no reachable Temporal, apply fails with temporal_unreachable and the service gets no organization', async () => {
    const { org, file } = await definitionFile();
    const result = await teamctl(['apply', '-f', file], { TEMPORAL_ADDRESS: '127.0.0.1:1' });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('error[temporal_unreachable]: cannot reach Temporal at 127.0.0.1:1');
    expect(result.stderr).toContain('hint: start one with `npm run temporal:dev`');
    expect(result.stdout).toBe('');
    const organizations = await new AcsClient({ baseUrl: server.url, apiKey }).listOrganizations();
    expect(organizations.map((o) => o.org_name)).not.toContain(org);
  });
});
