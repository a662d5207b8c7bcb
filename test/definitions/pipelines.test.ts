/** Pipelines and schedules in definition files: what validates, and every problem with its place. */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadDefinitionFile, parseDefinition } from '../../definitions/index.ts';
import { evaluateCondition, evaluateExpression, evaluateList, ExpressionError, scanExpression } from '../../definitions/expressions.ts';
import { checkReply, compileReplySchema, reaskMessage, stringOnly } from '../../definitions/reply-schema.ts';
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
      '--input n: not a number: "four"; --input b: expected true or false, got "yes"; --input "novalue": expected KEY=VALUE; unknown input "x" of pipeline p (did you mean "n"?); missing required input "n" of pipeline p; missing required input "s" of pipeline p; nothing was sent',
    );
  });
});

/** The team of DECIDE_HEAD: dana (human), triager, writer, reviewer (agents), each with an edge to dana; pipelines from line 10. */
const DECIDE_HEAD = [
  'apiVersion: teamctl/v1',
  'organization: { name: acme }',
  'teams:',
  '  - name: desk',
  '    agents: [{ name: triager }, { name: writer }, { name: reviewer }]',
  '    humans: [{ name: dana }]',
  '    edges: [[dana, triager], [dana, writer], [dana, reviewer]]',
  'pipelines:',
  '  - name: p',
  '    team: desk',
];

describe('definitions: pipelines that decide', () => {
  it('validate: the example of the issue validates, every construct included, with defaults filled in', () => {
    const definition = parseDefinition(
      yaml(
        ...DECIDE_HEAD,
        '    inputs: { doc: { type: string } }',
        '    steps:',
        '      - { id: classify, from: dana, to: triager, content: "{{ inputs.doc }}", reply: { schema: { type: object, properties: { urgent: { type: boolean } } } } }',
        '      - { id: page, when: "steps.classify.value.urgent", from: dana, to: reviewer, content: "Urgent {{ steps.classify.value.category }}" }',
        '      - loop:',
        '          id: rounds',
        '          maxIterations: 5',
        "          until: \"steps.verdict.value == 'approve'\"",
        '          steps:',
        '            - { id: draft, from: dana, to: writer, content: "Round {{ iteration }} {{ steps.verdict.reply }}" }',
        '            - { id: verdict, from: dana, to: reviewer, content: "{{ steps.draft.reply }}", reply: { schema: { enum: [approve, revise] } } }',
        '      - map:',
        '          id: per-item',
        "          items: \"steps['classify'].value.urgent ? ['a'] : ['b', 'c']\"",
        '          steps: [{ id: handle, from: dana, to: triager, content: "{{ item }} {{ steps.rounds.iterations }}" }]',
        '      - { run: { id: notify, pipeline: q, inputs: { text: "{{ steps.verdict.value }}", n: "{{ steps.rounds.iterations }}" } }, onError: continue }',
        '      - { sleep: { id: cool-off, for: 10m }, when: "steps.notify.status == \'failed\'" }',
        '    output: "{{ steps.verdict.value }} {{ steps.per-item.status }}"',
        '  - name: q',
        '    team: desk',
        '    inputs: { text: {}, n: { type: number } }',
        '    steps: [{ id: a, from: dana, to: writer, content: "{{ inputs.text }} {{ inputs.n }}" }]',
      ),
      'x.yaml',
    );
    const steps = definition.pipelines[0]!.steps;
    expect(steps[0]).toMatchObject({ id: 'classify', reply: { attempts: 3 } });
    expect(steps[3]).toMatchObject({ map: { id: 'per-item', as: 'item', maxConcurrency: 4 } });
    // No default is written for onError: a pinned definition (a schedule's) stays as it was.
    expect(Object.hasOwn(steps[1]!, 'onError')).toBe(false);
  });

  it('validate: unknown names in expressions are reported at their own line and column, with did-you-mean, and so are fields a step does not have', () => {
    const text = yaml(
      ...DECIDE_HEAD,
      '    inputs: { doc: {} }',
      '    steps:',
      '      - { id: classify, from: dana, to: triager, content: x }',
      '      - id: page',
      '        when: "steps.clasify.value.urgent && inputs.dco == \'x\' && steps.classify.valeu && foo"',
      '        from: dana',
      '        to: writer',
      '        content: "{{ iteration }} {{ steps.classify.value.x }}"',
    );
    expect(problemLines(text)).toEqual([
      'x.yaml:15:22: pipelines[0].steps[1].when: step "clasify" is not a step before this one (did you mean "classify"?)',
      'x.yaml:15:53: pipelines[0].steps[1].when: unknown input "dco"',
      'x.yaml:15:82: pipelines[0].steps[1].when: unknown field "valeu" of a step; use reply, value, status, error or thread_id (did you mean "value"?)',
      'x.yaml:15:91: pipelines[0].steps[1].when: unknown name "foo"; this can use inputs and steps',
      'x.yaml:18:19: pipelines[0].steps[1].content: {{ iteration }}: iteration is only known inside a loop',
    ]);
  });

  it('validate: an expression that does not parse, a schema that does not compile, a reply on a step that awaits none, and an id with a dash in CEL are each reported', () => {
    const text = yaml(
      ...DECIDE_HEAD,
      '    steps:',
      '      - { id: follow-up, from: dana, to: triager, content: x }',
      '      - { id: b, when: "steps.follow-up.reply == ", from: dana, to: writer, content: x }',
      '      - { id: c, when: "steps.follow-up.status == \'completed\'", from: dana, to: writer, content: x }',
      '      - id: d',
      '        from: dana',
      '        to: reviewer',
      '        content: x',
      '        awaitReply: false',
      '        reply: { schema: { enums: [a, b] } }',
    );
    const lines = problemLines(text);
    expect(lines[0]).toMatch(/^x\.yaml:13:\d+: pipelines\[0\]\.steps\[1\]\.when: invalid expression: /);
    expect(lines.slice(1)).toEqual([
      'x.yaml:14:31: pipelines[0].steps[2].when: step "follow" is not a step before this one (an id with a dash is written steps[\'follow-up\'] in an expression)',
      'x.yaml:14:38: pipelines[0].steps[2].when: unknown name "up"; this can use inputs and steps',
      'x.yaml:20:9: pipelines[0].steps[3].reply: a typed reply needs a reply to check; this step has awaitReply: false',
      'x.yaml:20:28: pipelines[0].steps[3].reply.schema.enums: unknown keyword "enums" (did you mean "enum"?)',
    ]);
  });

  it('validate: steps inside a map are not visible outside it, a later step of a loop is named only for its previous iteration (not as a thread), item and iteration only where they exist, and a run cannot form a cycle', () => {
    const text = yaml(
      ...DECIDE_HEAD,
      '    inputs: { n: { type: number } }',
      '    steps:',
      '      - map:',
      '          id: m',
      '          items: "[1, 2, item]"',
      '          as: it',
      '          steps:',
      '            - { id: h, from: dana, to: triager, content: "{{ it }} {{ iteration }}" }',
      '            - map: { id: inner, items: "[1]", as: it, steps: [{ id: i, from: dana, to: writer, content: x }] }',
      '      - { id: after, from: dana, to: reviewer, content: "{{ steps.h.reply }} {{ steps.m.results }}" }',
      '      - loop:',
      '          id: l',
      '          maxIterations: 2',
      '          until: "steps.late.value == \'x\'"',
      '          steps:',
      '            - { id: early, from: dana, to: writer, content: "{{ steps.late.reply }}" }',
      '            - { id: again, thread: late, from: dana, content: x }',
      '            - { id: late, from: dana, to: reviewer, content: "{{ steps.early.reply }} {{ iteration }}" }',
      '      - { run: { id: r, pipeline: q, inputs: { x: "1" } } }',
      '  - name: q',
      '    team: desk',
      '    steps: [{ run: { id: back, pipeline: p, inputs: { n: "two" } } }]',
    );
    expect(problemLines(text)).toEqual([
      'x.yaml:15:26: pipelines[0].steps[0].map.items: unknown name "item"; this can use inputs and steps',
      'x.yaml:18:68: pipelines[0].steps[0].map.steps[0].content: {{ iteration }}: iteration is only known inside a loop',
      'x.yaml:19:51: pipelines[0].steps[0].map.steps[1].map.as: "it" is already the item of an enclosing map; give this one another name with as:',
      'x.yaml:20:58: pipelines[0].steps[1].content: {{ steps.h.reply }}: "h" runs inside map "m", once per item: use steps.m.results (a list, one entry per item)',
      'x.yaml:27:36: pipelines[0].steps[2].loop.steps[1].thread: step "late" runs later in the loop\'s body: its thread is not there in the first iteration',
      'x.yaml:29:35: pipelines[0].steps[3].run.pipeline: pipeline "q" runs "p" again (directly or through others): sub-pipelines cannot form a cycle',
      'x.yaml:32:42: pipelines[1].steps[0].run.pipeline: pipeline "p" runs "q" again (directly or through others): sub-pipelines cannot form a cycle',
    ]);
  });

  it('validate: a run names a pipeline of the file and gives it inputs it accepts, literal ones of their type', () => {
    const text = yaml(
      ...DECIDE_HEAD,
      '    steps:',
      '      - { run: { id: r, pipeline: qq, inputs: {} } }',
      '      - { run: { id: s, pipeline: q, inputs: { n: "two", extra: x } } }',
      '  - name: q',
      '    team: desk',
      '    inputs: { n: { type: number }, flag: { type: boolean } }',
      '    steps: [{ id: a, from: dana, to: writer, content: "{{ inputs.n }}" }]',
    );
    expect(problemLines(text)).toEqual([
      'x.yaml:12:35: pipelines[0].steps[0].run.pipeline: unknown pipeline "qq" (did you mean "q"?)',
      'x.yaml:13:46: pipelines[0].steps[1].run.inputs: missing required input "flag" of pipeline q',
      'x.yaml:13:48: pipelines[0].steps[1].run.inputs.n: input "n" must be a number',
      'x.yaml:13:58: pipelines[0].steps[1].run.inputs.extra: unknown input "extra" of pipeline q',
    ]);
  });

  it('validate: a loop needs maxIterations from 1 to 100, a map at most 100 at once, a sleep a duration, and a typo in an entry key gets did-you-mean', () => {
    const text = yaml(
      ...DECIDE_HEAD,
      '    steps:',
      '      - { loop: { id: l, maxIterations: 0, steps: [{ id: a, from: dana, to: writer, content: x }] } }',
      '      - { map: { id: m, items: "[]", maxConcurrency: 500, steps: [{ id: b, from: dana, to: writer, content: x }] } }',
      '      - { sleep: { id: s, for: forever } }',
      '      - { sleep: { id: t, for: 1m }, onErorr: continue }',
    );
    expect(problemLines(text)).toEqual([
      'x.yaml:12:41: pipelines[0].steps[0].loop.maxIterations: maxIterations must be 1–100',
      'x.yaml:13:54: pipelines[0].steps[1].map.maxConcurrency: maxConcurrency must be 1–100',
      'x.yaml:14:32: pipelines[0].steps[2].sleep.for: must be a duration such as 30s, 10m, 2h or 7d (positive, at most 365d)',
      'x.yaml:15:38: pipelines[0].steps[3].onErorr: unknown key "onErorr" (did you mean "onError"?)',
    ]);
  });
});

describe('definitions: expressions (CEL)', () => {
  it('expressions: references name their root and constant fields with offsets; comprehension variables are not outside names', () => {
    expect(scanExpression("steps.m.results.all(r, r.handle.status == 'completed') && size(steps['follow-up'].reply) > iteration")).toEqual({
      ok: true,
      references: [
        { root: 'steps', offset: 0, segments: [{ name: 'm', offset: 6 }, { name: 'results', offset: 8 }] },
        { root: 'steps', offset: 63, segments: [{ name: 'follow-up', offset: 69 }, { name: 'reply', offset: 82 }] },
        { root: 'iteration', offset: 91, segments: [] },
      ],
    });
    expect(scanExpression('steps.x ==')).toMatchObject({ ok: false, message: expect.stringMatching(/^invalid expression: /) });
  });

  it('expressions: JSON integers are CEL ints and other numbers doubles; results come back as JSON; a non-bool condition and a non-list are refused', () => {
    const variables = { steps: { c: { value: { n: 3, f: 1.5, tags: ['a', 'b'] } } }, iteration: 2 };
    expect(evaluateExpression('steps.c.value.n + 1', variables)).toBe(4);
    expect(evaluateExpression("{'n': steps.c.value.f * 2.0, 'tags': steps.c.value.tags.map(t, t + '!'), 'i': iteration}", variables)).toEqual({ n: 3, tags: ['a!', 'b!'], i: 2 });
    expect(() => evaluateExpression('steps.c.value.f + 1', variables)).toThrow(/no matching overload/);
    expect(() => evaluateExpression('steps.d.value', variables)).toThrow(ExpressionError);
    expect(evaluateCondition('has(steps.c.value.n) && !has(steps.c.value.m)', variables)).toBe(true);
    expect(() => evaluateCondition("'yes'", variables)).toThrow('"\'yes\'" must be true or false, got the string "yes"');
    expect(evaluateList("steps.c.value.n > 2 ? ['x'] : []", variables)).toEqual(['x']);
    expect(() => evaluateList('steps.c.value', variables)).toThrow('must be a list, got a map');
  });
});

describe('definitions: typed replies', () => {
  const schema = { type: 'object', required: ['category', 'urgent'], properties: { category: { enum: ['bug', 'question', 'feature'] }, urgent: { type: 'boolean' } } };

  it('typed replies: the whole text or its first ```json block is the value, and what does not fit is said as the validator says it', () => {
    expect(checkReply('{"category": "bug", "urgent": true}', schema)).toEqual({ ok: true, value: { category: 'bug', urgent: true } });
    expect(checkReply('Here:\n```json\n{"category": "question", "urgent": false}\n```\nThanks', schema)).toEqual({ ok: true, value: { category: 'question', urgent: false } });
    expect(checkReply('{"category": "crash", "urgent": "no", "x": 1}', schema)).toEqual({ ok: false, problems: ['/category must be one of bug, question, feature', '/urgent must be boolean'] });
    expect(checkReply('{"urgent": true}', schema)).toEqual({ ok: false, problems: ['the reply must have the property "category"'] });
    const prose = checkReply('It is a bug.', schema);
    expect(prose.ok).toBe(false);
    expect(!prose.ok && prose.problems[0]).toMatch(/^the reply is not JSON \(.+\); answer with a JSON value, or put it in a ```json block$/);
  });

  it('typed replies: for a schema of strings only, a bare word counts, a JSON string too, and anything else is a string that must fit', () => {
    const decision = { enum: ['approve', 'reject'] };
    expect(stringOnly(decision)).toBe(true);
    expect(stringOnly({ anyOf: [{ type: 'string' }, { const: 'x' }] })).toBe(true);
    expect(stringOnly(schema)).toBe(false);
    expect(checkReply(' approve\n', decision)).toEqual({ ok: true, value: 'approve' });
    expect(checkReply('"reject"', decision)).toEqual({ ok: true, value: 'reject' });
    expect(checkReply('true', decision)).toEqual({ ok: false, problems: ['the reply must be one of approve, reject'] });
    expect(reaskMessage(['the reply must be one of approve, reject'], decision, 2, 3)).toBe(
      'Your reply does not fit what this step expects:\n- the reply must be one of approve, reject\nPlease answer again (reply 2 of 3) with one of: approve, reject.',
    );
  });

  it('typed replies: a schema compiles under 2020-12 with formats, and a $schema of another draft or an unknown keyword is refused', () => {
    expect(compileReplySchema({ type: 'string', format: 'email' }).ok).toBe(true);
    expect(checkReply('not-an-email', { type: 'string', format: 'email' })).toEqual({ ok: false, problems: ['the reply must match format "email"'] });
    expect(compileReplySchema({ $schema: 'http://json-schema.org/draft-07/schema#' })).toMatchObject({ ok: false, message: expect.stringContaining('2020-12') });
    expect(compileReplySchema({ type: 'object', requird: ['x'] })).toEqual({ ok: false, message: 'strict mode: unknown keyword: "requird"' });
  });
});

describe('validate: expressions are type-checked as a run would evaluate them', () => {
  it('validate: the issue\'s examples fail at the offending part inside the expression: a string or an int as items, an untyped reply as a condition, an int compared with a string, an unknown function', () => {
    const text = yaml(
      ...DECIDE_HEAD,
      '    inputs: { version: {}, x: {} }',
      '    steps:',
      '      - { id: ask, from: dana, to: triager, content: x }',
      '      - { id: a, when: "steps.ask.value", from: dana, to: writer, content: x }',
      "      - { id: b, when: \"size(inputs.x) > 'three'\", from: dana, to: writer, content: x }",
      "      - { id: c, when: \"inputs.x.contain('a')\", from: dana, to: writer, content: x }",
      '      - map: { id: m1, items: "inputs.version", steps: [{ id: d, from: dana, to: writer, content: x }] }',
      '      - map: { id: m2, items: "42", steps: [{ id: e, from: dana, to: writer, content: x }] }',
    );
    expect(problemLines(text)).toEqual([
      'x.yaml:14:25: pipelines[0].steps[1].when: when must be a bool (true or false), not a string',
      "x.yaml:15:40: pipelines[0].steps[2].when: cannot compare an int with a string (size(inputs.x) > 'three')",
      'x.yaml:16:34: pipelines[0].steps[3].when: unknown function "contain" (did you mean "contains"?)',
      'x.yaml:17:32: pipelines[0].steps[4].map.items: items must be a list, not a string',
      'x.yaml:18:32: pipelines[0].steps[5].map.items: items must be a list, not an int',
    ]);
  });

  it('validate: a typed reply\'s value has its schema\'s type, reply is a string, iteration an int, the item its list\'s element; what may be anything says nothing', () => {
    const text = yaml(
      ...DECIDE_HEAD,
      '    inputs: { n: { type: number }, flag: { type: boolean } }',
      '    steps:',
      '      - id: classify',
      '        from: dana',
      '        to: triager',
      '        content: x',
      '        reply: { schema: { type: object, properties: { category: { enum: [bug, idea] }, tags: { type: array, items: { type: string } }, n: { type: integer } } } }',
      '      - { id: free, from: dana, to: writer, content: x, reply: { schema: { type: object } } }',
      '      - { id: any, from: dana, to: writer, content: x, reply: { schema: {} } }',
      '      - id: fine',
      "        when: \"steps.any.value.x > 3 && steps.free.value.y == 'z' && inputs.n + 1 > 2 && inputs.flag && steps.classify.value.n == 1.0 && steps.classify.error == null && steps.classify.value.category != null && steps.classify.value.tags.exists(t, t.startsWith('a'))\"",
      '        from: dana',
      '        to: writer',
      '        content: x',
      '      - id: typo',
      "        when: \"steps.classify.value.categroy == 'bug'\"",
      '        from: dana',
      '        to: writer',
      '        content: x',
      '      - id: text',
      '        when: "steps.classify.reply > 3"',
      '        from: dana',
      '        to: writer',
      '        content: x',
      '      - map:',
      '          id: per-tag',
      '          items: "steps.classify.value.tags"',
      '          as: tag',
      '          steps:',
      '            - { id: h, when: "tag > 3", from: dana, to: writer, content: x }',
      '      - loop:',
      '          id: rounds',
      '          maxIterations: 2',
      "          until: \"iteration == 'last'\"",
      '          steps: [{ id: r, from: dana, to: writer, content: x }]',
    );
    expect(problemLines(text)).toEqual([
      'x.yaml:26:37: pipelines[0].steps[4].when: unknown field "categroy" of steps.classify.value; its schema has category, tags and n (did you mean "category"?)',
      'x.yaml:31:37: pipelines[0].steps[5].when: cannot compare a string with an int (steps.classify.reply > 3)',
      'x.yaml:40:35: pipelines[0].steps[6].map.steps[0].when: cannot compare a string with an int (tag > 3)',
      "x.yaml:44:29: pipelines[0].steps[7].loop.until: cannot compare an int with a string (iteration == 'last')",
    ]);
  });

  it('validate: the column points inside single-quoted, double-quoted, literal, folded and padded expressions, escapes included', () => {
    const text = yaml(
      ...DECIDE_HEAD,
      '    steps:',
      '      - { id: a, from: dana, to: triager, content: x }',
      '      - id: single',
      "        when: 'steps.a.reply == ''x'' && size(steps.a.reply) > ''y'''",
      '        from: dana',
      '        to: writer',
      '        content: x',
      '      - id: double',
      '        when: "steps.a.reply == \\"x\\" && size(steps.a.reply) > \\"y\\""',
      '        from: dana',
      '        to: writer',
      '        content: x',
      '      - id: literal',
      '        when: |',
      "          steps.a.reply == 'x' &&",
      "            size(steps.a.reply) > 'y'",
      '        from: dana',
      '        to: writer',
      '        content: x',
      '      - id: folded',
      '        when: >',
      "          steps.a.reply == 'x' &&",
      "          size(steps.a.reply) > 'y'",
      '        from: dana',
      '        to: writer',
      '        content: x',
      '      - id: padded',
      "        when: \"  size(steps.a.reply) > 'y'\"",
      '        from: dana',
      '        to: writer',
      '        content: x',
    );
    expect(problemLines(text).map((line) => line.split(': ')[0])).toEqual(['x.yaml:14:62', 'x.yaml:19:62', 'x.yaml:26:33', 'x.yaml:33:31', 'x.yaml:38:38']);
  });

  it('validate: a name after an escape in a quoted expression, or in a folded one, is pointed at where it is written', () => {
    const text = yaml(
      ...DECIDE_HEAD,
      '    steps:',
      '      - { id: a, from: dana, to: triager, content: x }',
      "      - { id: b, when: 'steps.a.reply == ''x'' && steps.zz.reply == ''y''', from: dana, to: writer, content: x }",
      '      - id: c',
      '        when: >',
      "          steps.a.reply == 'x' &&",
      "          steps.zz.reply == 'y'",
      '        from: dana',
      '        to: writer',
      '        content: x',
    );
    expect(problemLines(text)).toEqual([
      'x.yaml:13:57: pipelines[0].steps[1].when: step "zz" is not a step before this one',
      'x.yaml:17:17: pipelines[0].steps[2].when: step "zz" is not a step before this one',
    ]);
  });

  it('validate: iteration is not known inside a map, even in a loop, as a run gives a map\'s items none', () => {
    const text = yaml(
      ...DECIDE_HEAD,
      '    steps:',
      '      - loop:',
      '          id: l',
      '          maxIterations: 2',
      '          steps:',
      '            - map:',
      '                id: m',
      '                items: "[iteration]"',
      '                steps:',
      '                  - { id: h, when: "iteration > 0", from: dana, to: writer, content: "{{ iteration }}" }',
    );
    expect(problemLines(text)).toEqual([
      'x.yaml:20:37: pipelines[0].steps[0].loop.steps[0].map.steps[0].when: iteration is not known inside map "m": a run gives a map\'s items no iteration, even in a loop',
      'x.yaml:20:87: pipelines[0].steps[0].loop.steps[0].map.steps[0].content: {{ iteration }}: iteration is not known inside map "m": a run gives a map\'s items no iteration, even in a loop',
    ]);
  });

  it('validate: a syntax error says what is wrong where it is: = for ==, a trailing &&, a string never closed', () => {
    const text = yaml(
      ...DECIDE_HEAD,
      '    steps:',
      '      - { id: a, from: dana, to: triager, content: x }',
      "      - { id: s1, when: \"steps.a.reply = 'x'\", from: dana, to: writer, content: x }",
      "      - { id: s2, when: \"steps.a.reply == 'x' &&\", from: dana, to: writer, content: x }",
      "      - { id: s3, when: \"steps.a.reply == 'x\", from: dana, to: writer, content: x }",
    );
    expect(problemLines(text)).toEqual([
      'x.yaml:13:40: pipelines[0].steps[1].when: invalid expression: = is not a CEL operator (did you mean "=="?)',
      'x.yaml:14:47: pipelines[0].steps[2].when: invalid expression: the expression ends after &&',
      "x.yaml:15:43: pipelines[0].steps[3].when: invalid expression: unterminated string: the ' here is never closed",
    ]);
  });
});

describe('validate: reply schemas', () => {
  it('validate: a reply schema\'s problems are each at the offending keyword, in our words, with did-you-mean for unknown keywords', () => {
    const text = yaml(
      ...DECIDE_HEAD,
      '    steps:',
      '      - id: a',
      '        from: dana',
      '        to: triager',
      '        content: x',
      '        reply:',
      '          schema:',
      '            type: object',
      '            properties:',
      '              category: { enums: [bug, idea] }',
      '              urgent: { type: bool }',
      '              tags: { type: array, items: { enum: a } }',
      '            requird: [category]',
    );
    expect(problemLines(text)).toEqual([
      'x.yaml:20:27: pipelines[0].steps[0].reply.schema.properties.category.enums: unknown keyword "enums" (did you mean "enum"?)',
      'x.yaml:21:31: pipelines[0].steps[0].reply.schema.properties.urgent.type: `type` must be one of string, number, integer, boolean, object, array, null',
      'x.yaml:22:51: pipelines[0].steps[0].reply.schema.properties.tags.items.enum: `enum` must be a list',
      'x.yaml:23:13: pipelines[0].steps[0].reply.schema.requird: unknown keyword "requird" (did you mean "required"?)',
    ]);
  });
});
