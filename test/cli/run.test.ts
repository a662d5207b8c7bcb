/** `teamctl run` and `runs`: what is refused before anything is sent or started, and how a run is drawn. */
import { describe, expect, it } from 'vitest';
import { runCli } from '../../cli/program.ts';
import type { CliIo } from '../../cli/io.ts';
import { runFailureHint } from '../../cli/errors.ts';
import { flattenTree, locationLabel, renderTree } from '../../cli/run-tree.ts';
import { waitingSteps } from '../../engine/temporal-runs.ts';
import type { StepProgress } from '../../workflows/pipeline-orchestration.ts';

const example = new URL('../../examples/triage.yaml', import.meta.url).pathname;

/** Runs teamctl in-process against a service address nothing listens on: any request would fail loudly. */
async function teamctl(args: string[]): Promise<{ code: number; out: string }> {
  let out = '';
  const io: CliIo = {
    stdout: (t) => void (out += `${t}\n`),
    stderr: (t) => void (out += `${t}\n`),
    env: { ACS_BASE_URL: 'http://127.0.0.1:9', ACS_API_KEY: 'acs_org_unused', TEMPORAL_ADDRESS: '127.0.0.1:9' },
    isTTY: false,
  };
  return { code: await runCli(args, io), out };
}

describe('run', () => {
  it('run: an unknown pipeline is refused with did-you-mean and the pipelines of the file', async () => {
    const { code, out } = await teamctl(['run', 'triag', '-f', example, '--input', 'ticket=x']);
    expect(code).toBe(1);
    expect(out).toContain(`error[invalid_usage]: ${example} has no pipeline named "triag" (did you mean "triage"?)`);
  });

  it('run: --detach on the local engine is refused, since a local run lives in the CLI process', async () => {
    const { code, out } = await teamctl(['run', 'triage', '-f', example, '--input', 'ticket=x', '--detach']);
    expect(code).toBe(1);
    expect(out).toContain('--detach needs --engine temporal');
  });

  it('run: inputs are checked before the service is contacted', async () => {
    const { code, out } = await teamctl(['run', 'triage', '-f', example, '--input', 'priority=high']);
    expect(code).toBe(1);
    // The pipeline named once, and a hint saying how inputs are given and which there are.
    expect(out).toContain(
      'error[invalid_usage]: missing required input "ticket" of pipeline triage; nothing was sent\nhint: give each input as --input NAME=VALUE; pipeline triage takes ticket (string, required), priority (string, default "normal")',
    );
    expect(out).not.toContain('network_error');
  });

  it("run: a failed run's hint names what works for its engine: runs show with the run's id on Temporal; on the local engine, whose run ends with its process, the step's thread and the lines printed", () => {
    const onTemporal = runFailureHint('reply_invalid', 'temporal', 'teamctl-run/acme/approval/20261127T100000Z-3f9a1c0d2e4b');
    expect(onTemporal).toContain('see them with teamctl runs show teamctl-run/acme/approval/20261127T100000Z-3f9a1c0d2e4b (or teamctl thread show THREAD)');
    const local = (code: string) => runFailureHint(code, 'local', 'local/acme/approval/20261127T100000Z-3f9a1c0d2e4b', 'T-9');
    expect(local('reply_invalid')).toContain('see them with teamctl thread show T-9;');
    expect(local('loop_exhausted')).toBe("raise maxIterations, or make until reachable; the lines above show each iteration's steps (a local run ends with its process: runs show no longer finds it)");
    expect(local('expression_failed')).toContain("(the lines above show each finished entry's reply)");
    for (const code of ['reply_invalid', 'loop_exhausted', 'expression_failed']) expect(local(code)).not.toContain('runs show RUN');
    expect(runFailureHint('timed_out', 'local', 'local/x')).toBeUndefined();
  });

  it('runs show: an unreachable Temporal is reported as temporal_unreachable with its hint', async () => {
    const { code, out } = await teamctl(['runs', 'show', 'teamctl-run/x/y/z']);
    expect(code).toBe(1);
    expect(out).toContain('error[temporal_unreachable]');
    expect(out).toContain('hint: start one with `npm run temporal:dev`');
  });
});

describe('runs show: the tree', () => {
  const step = (id: string, status: StepProgress['status'], extra: Partial<StepProgress> = {}): StepProgress => ({ id, kind: 'step', status, thread_id: null, reply: null, value: null, error: null, ...extra });
  const tree: StepProgress[] = [
    step('classify', 'completed', { thread_id: 'T1', reply: '{"urgent":false}', misfits: [{ reply: 'a bug', problems: ['the reply is not JSON'] }] }),
    step('page', 'skipped'),
    {
      ...step('rounds', 'running'),
      kind: 'loop',
      iterations: [
        { index: 0, steps: [step('verdict', 'completed', { thread_id: 'T2', reply: 'revise' })] },
        { index: 1, steps: [step('verdict', 'running', { thread_id: 'T2', from: 'dana', to: 'reviewer', awaiting: 'reviewer' })] },
      ],
    },
    { ...step('per-item', 'failed', { error: { code: 'timed_out', message: 'no reply' } }), kind: 'map', items: [{ index: 0, item: 'repro', status: 'failed', steps: [step('handle', 'failed', { thread_id: 'T3', error: { code: 'timed_out', message: 'no reply' } })] }] },
    { ...step('ask', 'running', { thread_id: 'T4', from: 'triager', to: 'dana', awaiting: 'dana' }) },
  ];

  it('runs show: loop iterations and map items under their entry, misfit replies with what was wrong, skipped and failed entries marked', () => {
    expect(renderTree(tree, '  ')).toEqual([
      '  ✓ classify  thread T1  reply: {"urgent":false}  asked again 1×',
      '      ✗ reply 1 did not fit: a bug',
      '          the reply is not JSON',
      '  ↷ page (skipped)',
      '  … rounds (running)  loop, 2 iterations',
      '      iteration 0',
      '        ✓ verdict  thread T2  reply: revise',
      '      iteration 1',
      '        … verdict (running)  thread T2  dana → reviewer, awaiting reviewer',
      '  ✗ per-item (failed)  map, 1 item  timed_out: no reply',
      '      ✗ item 0: "repro"',
      '        ✗ handle (failed)  thread T3  timed_out: no reply',
      '  … ask (running)  thread T4  triager → dana, awaiting dana',
    ]);
  });

  it('runs show: the steps waiting for a human of the team, with the command that answers; agents awaited are left out', () => {
    expect(waitingSteps(tree, ['dana'])).toEqual([{ step: 'ask', thread_id: 'T4', from: 'triager', to: 'dana', answer_with: "teamctl thread send T4 --from dana --content '…'" }]);
    expect(waitingSteps(tree, undefined).map((w) => w.step)).toEqual(['rounds@1/verdict', 'ask']);
  });

  it("runs show: a sub-pipeline's step waiting for a person is listed too, under the run entry's id", () => {
    const parent = { ...step('notify', 'running'), kind: 'run' as const, run_id: 'local/acme/release/x/notify', steps: [step('tell', 'running', { thread_id: 'T5', from: 'writer', to: 'dana', awaiting: 'dana' })] };
    expect(waitingSteps([parent], ['dana'])).toEqual([{ step: 'notify/tell', thread_id: 'T5', from: 'writer', to: 'dana', answer_with: "teamctl thread send T5 --from dana --content '…'" }]);
  });

  it('run: streamed lines name where an entry is, and containers come after their entries', () => {
    expect(flattenTree(tree).map(({ label, step: s }) => `${label}${s.id}`)).toEqual(['classify', 'page', 'rounds › iteration 0 › verdict', 'rounds › iteration 1 › verdict', 'rounds', 'per-item › item 0 › handle', 'per-item', 'ask']);
    expect(locationLabel([{ loop: 'rounds', iteration: 2 }, { map: 'each', index: 3, item: 'x' }, { run: 'notify' }])).toBe('rounds › iteration 2 › each › item 3 › notify › ');
  });
});
