/** Pipelines and schedules in definition files: what validates, and every problem with its place. */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadDefinitionFile, parseDefinition } from '../../definitions/index.ts';
import { renderTemplate, templateReferences } from '../../definitions/template.ts';
import { parseRunInputs } from '../../cli/commands/run.ts';
import { problemLines, yaml } from './helpers.ts';

const EXAMPLE = fileURLToPath(new URL('../../examples/triage.yaml', import.meta.url));
const NIGHTLY = fileURLToPath(new URL('../../examples/nightly-triage.yaml', import.meta.url));

/** A team with dana (human), triager and summarizer (agents), edges dana–triager and dana–summarizer; pipelines from line 12. */
const TEAM = [
  'apiVersion: teamctl/v1',
  'organization: { name: acme }',
  'teams:',
  '  - name: intake',
  '    agents: [{ name: triager }, { name: summarizer }, { name: loner }]',
  '    humans: [{ name: dana }]',
  '    edges:',
  '      - [dana, triager]',
  '      - [dana, summarizer]',
  'pipelines:',
  '  - name: p',
];

describe('definitions: pipelines', () => {
  it('pipelines: the examples validate with their steps, a parallel group, defaults and a schedule', async () => {
    const definition = await loadDefinitionFile(EXAMPLE);
    const triage = definition.pipelines.find((p) => p.name === 'triage')!;
    expect(triage.inputs).toEqual({ ticket: { type: 'string' }, priority: { type: 'string', default: 'normal' } });
    expect(triage.steps).toHaveLength(3);
    expect(triage.steps[1]).toMatchObject({ id: 'follow-up', thread: 'classify', awaitReply: true });
    expect(triage.steps[2]).toMatchObject({ parallel: [{ id: 'summary' }, { id: 'notify', awaitReply: false }] });
    expect((await loadDefinitionFile(NIGHTLY)).schedules).toEqual([
      { name: 'nightly-triage', pipeline: 'sweep', cron: '0 2 * * *', timezone: 'Europe/Berlin', overlap: 'skip', catchupWindow: '1h', paused: false, inputs: { ticket: 'nightly sweep' } },
    ]);
  });

  it('pipelines: unknown participants, missing edges, later and parallel references, replies never awaited and duplicate ids are all reported with their places', () => {
    const text = yaml(
      ...TEAM,
      '    team: intake',
      '    inputs: { ticket: {} }',
      '    steps:',
      '      - id: a',
      '        from: dana',
      '        to: trigaer',
      '        content: "{{ inputs.tiket }} {{ steps.b.reply }}"',
      '      - parallel:',
      '          - id: b',
      '            from: dana',
      '            to: summarizer',
      '            content: "{{ steps.c.thread_id }}"',
      '          - id: c',
      '            from: dana',
      '            to: loner',
      '            awaitReply: false',
      '            content: x',
      '      - id: d',
      '        thread: c',
      '        from: summarizer',
      '        content: "{{ steps.c.reply }} {{ steps.b.foo }} {{ what }}"',
      '      - id: a',
      '        from: dana',
      '        to: triager',
      '        content: x',
    );
    expect(problemLines(text)).toEqual([
      'x.yaml:17:13: pipelines[0].steps[0].to: unknown participant "trigaer" in team intake (did you mean "triager"?)',
      'x.yaml:18:19: pipelines[0].steps[0].content: {{ inputs.tiket }}: unknown input "tiket" (did you mean "ticket"?)',
      'x.yaml:18:38: pipelines[0].steps[0].content: {{ steps.b.reply }}: step "b" is not a step before this one',
      'x.yaml:23:23: pipelines[0].steps[1].parallel[0].content: {{ steps.c.thread_id }}: step "c" runs in the same parallel group, so its reply is not there yet',
      'x.yaml:26:17: pipelines[0].steps[1].parallel[1].to: no edge joins "dana" and "loner" in team intake; add [dana, loner] to its edges',
      'x.yaml:31:15: pipelines[0].steps[2].from: "summarizer" is not in the thread of step "c" (between dana and loner)',
      'x.yaml:32:19: pipelines[0].steps[2].content: {{ steps.c.reply }}: step "c" has awaitReply: false, so it has no reply',
      'x.yaml:32:39: pipelines[0].steps[2].content: {{ steps.b.foo }}: unknown field "foo" of a step; use reply, value, status, error or thread_id',
      'x.yaml:32:57: pipelines[0].steps[2].content: {{ what }}: unknown name "what"; this can use inputs and steps',
      'x.yaml:33:13: pipelines[0].steps[3].id: duplicate step id "a" (first used at steps[0])',
    ]);
  });

  it('pipelines: a typo in a step key gets did-you-mean, and a bad duration says what a duration is', () => {
    const text = yaml(...TEAM, '    team: intake', '    steps:', '      - id: a', '        from: dana', '        to: triager', '        content: x', '        timout: 5m', '      - id: b', '        thread: a', '        from: dana', '        content: y', '        timeout: 5 parsecs');
    expect(problemLines(text)).toEqual([
      'x.yaml:18:9: pipelines[0].steps[0].timout: unknown key "timout" (did you mean "timeout"?)',
      'x.yaml:23:18: pipelines[0].steps[1].timeout: must be a duration such as 30s, 10m, 2h or 7d (positive, at most 365d)',
    ]);
  });

  it('pipelines: a step needs exactly one of to and thread, and a team of the file', () => {
    const text = yaml(...TEAM, '    team: intak', '    steps:', '      - id: a', '        from: dana', '        content: x');
    expect(problemLines(text)).toEqual([
      'x.yaml:12:11: pipelines[0].team: unknown team "intak" (did you mean "intake"?)',
      'x.yaml:14:9: pipelines[0].steps[0]: step "a" needs exactly one of `to` (a new thread) and `thread` (continue an earlier step\'s thread)',
    ]);
  });

  it('schedules: a bad cron, an unknown time zone, an unknown pipeline, both cron and every, and unknown inputs are reported', () => {
    const text = yaml(
      ...TEAM,
      '    team: intake',
      '    inputs: { ticket: { type: string } }',
      '    steps: [{ id: a, from: dana, to: triager, content: x }]',
      'schedules:',
      '  - name: s',
      '    pipeline: p',
      '    cron: "0 25 * * *"',
      '    every: 5m',
      '    timezone: Mars/Base',
      '    inputs: { tickt: x }',
      '  - name: t',
      '    pipeline: q',
      '    every: 1h',
    );
    expect(problemLines(text)).toEqual([
      'x.yaml:16:5: schedules[0]: schedule "s" needs exactly one of `cron` and `every`',
      'x.yaml:18:11: schedules[0].cron: invalid cron expression: CronPattern: Invalid value for hour: 25',
      'x.yaml:20:15: schedules[0].timezone: unknown time zone "Mars/Base"; use an IANA name such as Europe/Berlin or UTC',
      'x.yaml:21:13: schedules[0].inputs: missing required input "ticket" of pipeline p',
      'x.yaml:21:15: schedules[0].inputs.tickt: unknown input "tickt" of pipeline p (did you mean "ticket"?)',
      'x.yaml:23:15: schedules[1].pipeline: unknown pipeline "q" (did you mean "p"?)',
    ]);
  });
});

describe('definitions: templates', () => {
  it('templates: render inserts values as they are, without HTML escaping', () => {
    expect(renderTemplate('Ticket {{ inputs.t }} <{{ steps.a.reply }}>', { inputs: { t: 'A&B' }, steps: { a: { reply: '"<x>"' } } })).toBe('Ticket A&B <"<x>">');
  });

  it('templates: references are listed with their offsets, and partials or broken tags are refused', () => {
    expect(templateReferences('a {{ inputs.x }} {{#steps.s.reply}}y{{/steps.s.reply}}')).toEqual({
      ok: true,
      references: [
        { name: 'inputs.x', offset: 2, inSection: false },
        { name: 'steps.s.reply', offset: 17, inSection: false },
      ],
    });
    expect(templateReferences('{{> other}}')).toEqual({ ok: false, message: 'invalid template: partials ({{> other}}) are not supported' });
    expect(templateReferences('{{ open').ok).toBe(false);
  });
});

describe('run: inputs', () => {
  const pipeline = parseDefinition(
    yaml(...TEAM, '    team: intake', '    inputs: { n: { type: number }, b: { type: boolean, default: false }, s: {} }', '    steps: [{ id: a, from: dana, to: triager, content: x }]'),
    'x.yaml',
  ).pipelines[0]!;

  it('run: --input values are typed as the pipeline declares them', () => {
    expect(parseRunInputs(pipeline, ['n=4.5', 'b=true', 's=a=b'])).toEqual({ n: 4.5, b: true, s: 'a=b' });
  });

  it('run: every problem of the inputs is refused in one error', () => {
    expect(() => parseRunInputs(pipeline, ['n=four', 'b=yes', 'x=1', 'novalue'])).toThrow(
      'pipeline p: --input n: not a number: "four"; --input b: expected true or false, got "yes"; --input "novalue": expected KEY=VALUE; unknown input "x" of pipeline p (did you mean "n"?); missing required input "n" of pipeline p; missing required input "s" of pipeline p; nothing was sent',
    );
  });
});
