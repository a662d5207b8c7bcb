/**
 * The pipeline interpreter over scripted activities (no server, no Temporal): what each construct
 * sends, in which order and under which idempotency key; the failures it raises itself; and a run
 * paused at every point it may pause (as continue-as-new does) and resumed from its carried state,
 * which sends exactly what an uninterrupted run sends.
 */
import { describe, expect, it } from 'vitest';
import type { ConverseInput, ConverseResult } from '../../activities/conversation-activities.ts';
import { parseDefinition } from '../../definitions/load.ts';
import type { PipelineDefinition } from '../../definitions/pipeline-schema.ts';
import { initialState, orchestratePipeline } from '../../workflows/pipeline-orchestration.ts';
import type { PipelineActivities, PipelineHooks, PipelineResult, PipelineState, StepProgress } from '../../workflows/pipeline-orchestration.ts';

const HEAD = `apiVersion: teamctl/v1
organization: { name: acme }
teams:
  - name: desk
    agents: [{ name: bot }, { name: other }]
    humans: [{ name: dana }]
    edges: [[dana, bot], [dana, other]]
pipelines:
`;

/** The pipelines of a YAML fragment (under `pipelines:`), validated as a whole definition. */
function pipelines(fragment: string): Record<string, PipelineDefinition> {
  return Object.fromEntries(parseDefinition(`${HEAD}${fragment}`, 'x.yaml').pipelines.map((p) => [p.name, p]));
}

/** Scripted activities: `reply(input)` answers each awaited message; every call is recorded. */
function scripted(reply: (input: ConverseInput) => string | Error = (input) => `re: ${input.content}`) {
  const calls: ConverseInput[] = [];
  let threads = 0;
  const acts: PipelineActivities = {
    async resolveTeam() {
      return { teamId: 't', participants: { dana: 'D', bot: 'B', other: 'O' }, edges: { '["bot","dana"]': 'E1', '["dana","other"]': 'E2' }, humans: ['dana'] };
    },
    async converse(input): Promise<ConverseResult> {
      calls.push(input);
      const threadId = 'edgeId' in input.target ? `thread-${++threads}` : input.target.threadId;
      if (input.awaitFromId === undefined) return { threadId, messageId: `m-${calls.length}`, reply: null };
      const answer = reply(input);
      if (answer instanceof Error) throw answer;
      return { threadId, messageId: `m-${calls.length}`, reply: { messageId: `r-${calls.length}`, senderId: input.awaitFromId, content: answer } };
    },
  };
  return { acts, calls };
}

/** Runs a pipeline to its end, pausing wherever `pauses` says (then resuming from the carried state, as continue-as-new does). */
async function run(
  definitions: Record<string, PipelineDefinition>,
  name: string,
  acts: PipelineActivities,
  options: { inputs?: Record<string, string | number | boolean>; pauses?: () => boolean; children?: string[] } = {},
): Promise<{ result: PipelineResult; pausedTimes: number }> {
  let state: PipelineState = initialState(definitions[name]!);
  let pausedTimes = 0;
  const hooks: PipelineHooks = {
    now: () => 0,
    runKey: `run/${name}`,
    sleep: async () => undefined,
    runChild: async ({ runId, input }) => {
      options.children?.push(runId);
      const child = await orchestratePipeline(input, acts, initialState(input.pipeline), { ...hooks, runKey: runId, shouldPause: undefined });
      if (!child.complete) throw new Error('a child paused');
      return child.result;
    },
    ...(options.pauses ? { shouldPause: options.pauses } : {}),
  };
  for (;;) {
    const outcome = await orchestratePipeline({ connection: { baseUrl: 'http://x', apiKeyEnv: 'K' }, organization: 'acme', pipeline: definitions[name]!, pipelines: definitions, inputs: options.inputs ?? {} }, acts, state, hooks);
    if (outcome.complete) return { result: outcome.result, pausedTimes };
    pausedTimes += 1;
    // What continue-as-new carries: the state as JSON.
    state = JSON.parse(JSON.stringify(outcome.state)) as PipelineState;
  }
}

const entry = (steps: StepProgress[], id: string) => steps.find((s) => s.id === id)!;

const REVIEW = `  - name: review
    team: desk
    steps:
      - id: classify
        from: dana
        to: bot
        content: classify
        reply: { schema: { type: object, required: [urgent], properties: { urgent: { type: boolean } } } }
      - { id: page, when: "steps.classify.value.urgent", from: dana, to: other, content: page }
      - loop:
          id: rounds
          maxIterations: 4
          until: "steps.verdict.value == 'approve'"
          steps:
            - { id: draft, from: dana, to: bot, content: "draft {{ iteration }} after {{ steps.verdict.reply }}" }
            - { id: verdict, from: dana, to: other, content: "verdict {{ iteration }}", reply: { schema: { enum: [approve, revise] } } }
      - map:
          id: each
          items: "['a', 'b', 'c']"
          maxConcurrency: 2
          steps:
            - { id: handle, from: dana, to: bot, content: "handle {{ item }}" }
            - { id: follow, thread: handle, from: dana, content: "follow {{ item }}: {{ steps.handle.reply }}", awaitReply: false }
      - { run: { id: notify, pipeline: announce, inputs: { text: "{{ steps.verdict.value }}", n: "{{ steps.rounds.iterations }}" } } }
    output: "{{ steps.verdict.value }} {{ steps.notify.value }} {{ steps.each.results }}"
  - name: announce
    team: desk
    inputs: { text: {}, n: { type: number } }
    steps: [{ id: tell, from: dana, to: other, content: "{{ inputs.text }} x{{ inputs.n }}" }]
    output: "{{ steps.tell.reply }}"
`;

/** The review's scripted answers: the classification wrong once; revise, revise, approve. */
function reviewReplies(input: ConverseInput): string {
  if (input.stepId === 'classify') return 'not json';
  if (input.stepId === 'classify#2') return '{"urgent": false}';
  const round = /^rounds@(\d+)\/verdict$/.exec(input.stepId);
  if (round) return Number(round[1]) < 2 ? 'revise' : 'approve';
  return `re: ${input.content}`;
}

describe('pipeline interpreter', () => {
  it('interpreter: each construct sends what it says, in order, under keys of its own: a re-ask, a skipped branch, loop iterations in one thread per step, map items in threads of their own, a sub-pipeline under the run', async () => {
    const { acts, calls } = scripted(reviewReplies);
    const children: string[] = [];
    const { result } = await run(pipelines(REVIEW), 'review', acts, { children });
    expect(calls.filter((c) => !c.stepId.startsWith('each')).map((c) => [c.stepId, c.content.split('\n')[0], 'threadId' in c.target ? c.target.threadId : 'new'])).toEqual([
      ['classify', 'classify', 'new'],
      ['classify#2', 'Your reply does not fit what this step expects:', 'thread-1'],
      ['rounds@0/draft', 'draft 0 after ', 'new'],
      ['rounds@0/verdict', 'verdict 0', 'new'],
      ['rounds@1/draft', 'draft 1 after revise', 'thread-2'],
      ['rounds@1/verdict', 'verdict 1', 'thread-3'],
      ['rounds@2/draft', 'draft 2 after revise', 'thread-2'],
      ['rounds@2/verdict', 'verdict 2', 'thread-3'],
      ['tell', 'approve x3', 'new'],
    ]);
    // Items in threads of their own; the follow-up of each in its item's thread, and awaiting nothing.
    const items = calls.filter((c) => c.stepId.startsWith('each'));
    expect(items.map((c) => c.stepId).sort()).toEqual(['each[0]/follow', 'each[0]/handle', 'each[1]/follow', 'each[1]/handle', 'each[2]/follow', 'each[2]/handle']);
    for (const i of [0, 1, 2]) {
      const handle = items.find((c) => c.stepId === `each[${i}]/handle`)!;
      const follow = items.find((c) => c.stepId === `each[${i}]/follow`)!;
      expect('edgeId' in handle.target).toBe(true);
      expect(follow.awaitFromId).toBeUndefined();
      expect(follow.content).toBe(`follow ${'abc'[i]}: re: handle ${'abc'[i]}`);
    }
    // The child ran under the parent's key, and its own steps under its own.
    expect(children).toEqual(['run/review/notify']);
    expect(calls.find((c) => c.stepId === 'tell')!.runKey).toBe('run/review/notify');
    expect(entry(result.steps, 'page').status).toBe('skipped');
    expect(entry(result.steps, 'classify').misfits).toHaveLength(1);
    expect(result.output).toBe('approve re: approve x3 [{"handle":{"reply":"re: handle a","value":"re: handle a","status":"completed","error":null,"thread_id":"thread-4"},"follow":{"reply":null,"value":null,"status":"completed","error":null,"thread_id":"thread-4"}},{"handle":{"reply":"re: handle b","value":"re: handle b","status":"completed","error":null,"thread_id":"thread-5"},"follow":{"reply":null,"value":null,"status":"completed","error":null,"thread_id":"thread-5"}},{"handle":{"reply":"re: handle c","value":"re: handle c","status":"completed","error":null,"thread_id":"thread-6"},"follow":{"reply":null,"value":null,"status":"completed","error":null,"thread_id":"thread-6"}}]');
  });

  it('interpreter: paused at every point it may pause and resumed from its carried state, a run sends exactly what an uninterrupted run sends', async () => {
    const whole = scripted(reviewReplies);
    const uninterrupted = await run(pipelines(REVIEW), 'review', whole.acts);
    const paused = scripted(reviewReplies);
    // Pause at every second chance: between entries, iterations and items, mid-map with items in flight.
    let asked = 0;
    const resumed = await run(pipelines(REVIEW), 'review', paused.acts, { pauses: () => ++asked % 2 === 0 });
    expect(resumed.pausedTimes).toBeGreaterThan(5);
    const keys = (calls: ConverseInput[]) => calls.map((c) => `${c.runKey} ${c.stepId} ${c.content}`).sort();
    expect(keys(paused.calls)).toEqual(keys(whole.calls));
    expect(resumed.result.output).toBe(uninterrupted.result.output);
    expect(JSON.stringify(resumed.result.steps)).toBe(JSON.stringify(uninterrupted.result.steps));
  });

  it('interpreter: a typed reply that never fits fails with reply_invalid after its attempts; a loop whose until never holds fails with loop_exhausted; onError: continue marks them failed and goes on', async () => {
    const defs = pipelines(`  - name: p
    team: desk
    steps:
      - { id: ask, from: dana, to: bot, content: q, reply: { schema: { enum: [yes, no] }, attempts: 2 }, onError: continue }
      - loop: { id: l, maxIterations: 2, until: "false", steps: [{ id: s, from: dana, to: other, content: x }] }
        onError: continue
      - { id: after, when: "steps.ask.status == 'failed' && steps.l.error.code == 'loop_exhausted'", from: dana, to: bot, content: "{{ steps.ask.error.code }} {{ steps.l.iterations }}" }
      - { id: last, from: dana, to: bot, content: end }
`);
    const { acts, calls } = scripted((input) => (input.stepId.startsWith('ask') ? 'maybe' : 'ok'));
    const { result } = await run(defs, 'p', acts);
    expect(calls.map((c) => c.stepId)).toEqual(['ask', 'ask#2', 'l@0/s', 'l@1/s', 'after', 'last']);
    expect(entry(result.steps, 'ask')).toMatchObject({ status: 'failed', error: { code: 'reply_invalid', message: 'step ask: none of the 2 replies fits its schema; the last one: the reply must be one of yes, no' } });
    expect(entry(result.steps, 'l')).toMatchObject({ status: 'failed', error: { code: 'loop_exhausted' } });
    expect(calls.find((c) => c.stepId === 'after')!.content).toBe('reply_invalid 2');
  });

  it('interpreter: without onError the first failure fails the run with its code: an expression that is not a bool, items over 1,000, an input of the wrong type, an activity\'s own failure', async () => {
    const defs = pipelines(`  - name: when
    team: desk
    # dyn(): validate refuses a condition it knows is not a bool; the run's own check is what is tested here.
    steps: [{ id: a, when: "dyn('yes')", from: dana, to: bot, content: x }]
  - name: big
    team: desk
    steps:
      - { id: plan, from: dana, to: bot, content: list, reply: { schema: { type: array } } }
      - map: { id: m, items: "steps.plan.value", steps: [{ id: s, from: dana, to: bot, content: x }] }
  - name: child
    team: desk
    inputs: { n: { type: number } }
    steps: [{ id: a, from: dana, to: bot, content: x }]
  - name: parent
    team: desk
    inputs: { word: { default: many } }
    steps: [{ run: { id: r, pipeline: child, inputs: { n: "{{ inputs.word }}" } } }]
  - name: timeout
    team: desk
    steps: [{ id: a, from: dana, to: bot, content: x }, { id: b, from: dana, to: bot, content: y }]
`);
    const failure = async (name: string, reply?: (input: ConverseInput) => string | Error) => {
      const { acts, calls } = scripted(reply);
      const error = await run(defs, name, acts).then(
        () => undefined,
        (e: unknown) => e as { type?: string; message: string },
      );
      return { type: error?.type, message: error?.message, calls: calls.map((c) => c.stepId) };
    };
    expect(await failure('when')).toEqual({ type: 'expression_failed', message: '"dyn(\'yes\')" must be true or false, got the string "yes"', calls: [] });
    expect(await failure('parent')).toEqual({ type: 'invalid_input', message: 'r: input n of pipeline child must be a number, got "many"', calls: [] });
    const timedOut = Object.assign(new Error('no reply'), { type: 'timed_out' });
    expect(await failure('timeout', () => timedOut)).toEqual({ type: 'timed_out', message: 'no reply', calls: ['a'] });
    const thousandAndOne = JSON.stringify(Array.from({ length: 1_001 }, (_, i) => i));
    expect(await failure('big', () => thousandAndOne)).toEqual({ type: 'expression_failed', message: 'map m: "steps.plan.value" gave 1,001 items; a map takes at most 1,000', calls: ['plan'] });
  });

  it('interpreter: a parallel group with onError: continue waits for every member before going on, and marks the members that failed', async () => {
    const defs = pipelines(`  - name: p
    team: desk
    steps:
      - parallel:
          - { id: slow, from: dana, to: bot, content: slow }
          - { id: broken, from: dana, to: other, content: broken }
        onError: continue
      - { id: after, from: dana, to: bot, content: "{{ steps.slow.reply }} / {{ steps.broken.error.code }}" }
`);
    const order: string[] = [];
    const { acts } = scripted();
    const converse = acts.converse;
    acts.converse = async (input) => {
      order.push(`start ${input.stepId}`);
      if (input.stepId === 'broken') throw Object.assign(new Error('refused'), { type: 'not_a_participant' });
      // The slow member ends after its sibling has failed.
      await new Promise((resolve) => setTimeout(resolve, 20));
      const result = await converse(input);
      order.push(`end ${input.stepId}`);
      return result;
    };
    const { result } = await run(defs, 'p', acts);
    expect(order).toEqual(['start slow', 'start broken', 'end slow', 'start after', 'end after']);
    expect(entry(result.steps, 'broken')).toMatchObject({ status: 'failed', error: { code: 'not_a_participant' } });
    expect(entry(result.steps, 'after').reply).toBe('re: re: slow / not_a_participant');
  });
});
