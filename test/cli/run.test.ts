/** `teamctl run` and `runs`: what is refused before anything is sent or started, and how a run is drawn. */
import { describe, expect, it } from 'vitest';
import { runCli } from '../../cli/program.ts';
import type { CliIo } from '../../cli/io.ts';
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
    expect(out).toContain('missing required input "ticket" of pipeline triage; nothing was sent');
    expect(out).not.toContain('network_error');
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

  it('run: streamed lines name where an entry is, and containers come after their entries', () => {
    expect(flattenTree(tree).map(({ label, step: s }) => `${label}${s.id}`)).toEqual(['classify', 'page', 'rounds › iteration 0 › verdict', 'rounds › iteration 1 › verdict', 'rounds', 'per-item › item 0 › handle', 'per-item', 'ask']);
    expect(locationLabel([{ loop: 'rounds', iteration: 2 }, { map: 'each', index: 3, item: 'x' }, { run: 'notify' }])).toBe('rounds › iteration 2 › each › item 3 › notify › ');
  });
});
