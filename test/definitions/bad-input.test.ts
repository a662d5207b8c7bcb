/**
 * Definition files that are broken or hostile: every problem at once, and bounds on what a file
 * can cost (size, encoding, documents, nesting, aliases, huge values), each a clear error naming
 * the file.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DefinitionError, loadDefinitionFile } from '../../definitions/index.ts';
import { invalidUtf8Offset, MAX_REPORTED_PROBLEMS, parseDefinition } from '../../definitions/load.ts';
import { HEAD, problemLines, yaml } from './helpers.ts';

/** Writes `content` to a new file and returns the problem lines of loading it (with a size limit when given). */
async function loadProblems(content: string | Uint8Array, maxBytes?: number): Promise<{ file: string; lines: string[] }> {
  const file = join(await mkdtemp(join(tmpdir(), 'teamctl-bad-')), 'team.yaml');
  await writeFile(file, content);
  const error = await loadDefinitionFile(file, maxBytes === undefined ? {} : { maxBytes }).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof DefinitionError)) throw new Error(`expected a DefinitionError, got ${String(error)}`);
  return { file, lines: error.message.split('\n') };
}

describe('definitions: every problem at once', () => {
  it('schema problems and cross-reference problems are reported together, in file order', () => {
    const text = yaml(
      ...HEAD,
      'teams:',
      '  - name: intake',
      '    agents:',
      '      - name: triager',
      '        provider: gpt',
      '    humans:',
      '      - name: dana',
      '        emial: dana@example.com',
      '    edges:',
      '      - [dana, trigaer]',
      'pipelines:',
      '  - name: p',
      '    team: intake',
      '    steps:',
      '      - id: a',
      '        from: dana',
      '        to: nobody',
      '        content: "{{ inputs.x }}"',
    );
    expect(problemLines(text)).toEqual([
      'x.yaml:8:19: teams[0].agents[0].provider: unknown provider "gpt" (expected one of openai, anthropic, google, mistral, groq, openrouter, echo)',
      'x.yaml:11:9: teams[0].humans[0].emial: unknown key "emial" (did you mean "email"?)',
      'x.yaml:13:16: teams[0].edges[0][1]: unknown participant "trigaer" in team intake (did you mean "triager"?)',
      'x.yaml:20:13: pipelines[0].steps[0].to: unknown participant "nobody" in team intake',
      'x.yaml:21:19: pipelines[0].steps[0].content: {{ inputs.x }}: unknown input "x"',
    ]);
  });

  it('a name with a terminal control sequence is refused, as the service refuses it; tab and newline are not controls here', () => {
    const text = yaml(...HEAD, 'teams:', '  - name: "intake\\e[2J"', '    humans:', '      - name: "dana\\tkerr"');
    expect(problemLines(text)).toEqual(['x.yaml:5:11: teams[0].name: must not contain control characters (tab and newline aside)']);
  });

  it('a team that lost a participant to the schema gets no guessed edge problems', () => {
    const text = yaml(...HEAD, 'teams:', '  - name: t', '    agents:', '      - provider: echo', '    humans:', '      - name: dana', '    edges:', '      - [dana, ghost]');
    // The nameless agent may be "ghost": only the schema's problem is certain.
    expect(problemLines(text)).toEqual(['x.yaml:7:9: teams[0].agents[0]: missing required key "name"']);
  });

  it('a duplicate team name is reported beside a schema problem of another team', () => {
    const text = yaml(...HEAD, 'teams:', '  - name: t', '  - name: t', '  - name: u', '    colour: red');
    expect(problemLines(text)).toEqual([
      'x.yaml:6:11: teams[1].name: duplicate team name "t" (first used by teams[0])',
      'x.yaml:8:5: teams[2].colour: unknown key "colour" (expected one of name, description, protect, renamedFrom, agents, humans, edges)',
    ]);
  });

  it('a schedule of a pipeline that failed the schema gets no input problems', () => {
    const text = yaml(
      ...HEAD,
      'pipelines:',
      '  - name: p',
      '    team: t',
      '    stepz: []',
      'schedules:',
      '  - name: s',
      '    pipeline: p',
      '    every: 1h',
      '    inputs: { x: 1 }',
    );
    expect(problemLines(text)).toEqual([
      'x.yaml:5:5: pipelines[0]: missing required key "steps"',
      'x.yaml:7:5: pipelines[0].stepz: unknown key "stepz" (did you mean "steps"?)',
    ]);
  });

  it('a number out of range is said with its bounds, taken from the schema, and hides none of the schema, expression and cross-reference problems of its pipeline or agent', () => {
    const text = yaml(
      ...HEAD,
      'teams:',
      '  - name: t',
      '    agents:',
      '      - { name: bot, provider: echo, maxSteps: 0, tools: { team: true, approval: { by: dan, tools: [send_message] } } }',
      '    humans: [{ name: dana }]',
      '    edges: [[dana, bot]]',
      'pipelines:',
      '  - name: p',
      '    team: t',
      '    steps:',
      '      - loop:',
      '          id: l',
      '          maxIterations: 0',
      "          until: \"steps.a.reply = 'x'\"",
      '          steps:',
      '            - { id: a, from: dana, to: bott, content: "{{ inputs.x }}", reply: { schema: { enums: [a] }, attempts: 11 } }',
      '      - { map: { id: m, items: "[1]", maxConcurrency: 2.5, steps: [{ id: b, from: dana, to: bot, content: x }] } }',
    );
    expect(problemLines(text)).toEqual([
      'x.yaml:7:48: teams[0].agents[0].maxSteps: maxSteps must be 1–100',
      'x.yaml:7:88: teams[0].agents[0].tools.approval.by: unknown human "dan" in team t (did you mean "dana"?)',
      'x.yaml:16:26: pipelines[0].steps[0].loop.maxIterations: maxIterations must be 1–100',
      'x.yaml:17:33: pipelines[0].steps[0].loop.until: invalid expression: = is not a CEL operator (did you mean "=="?)',
      'x.yaml:19:40: pipelines[0].steps[0].loop.steps[0].to: unknown participant "bott" in team t (did you mean "bot"?)',
      'x.yaml:19:56: pipelines[0].steps[0].loop.steps[0].content: {{ inputs.x }}: unknown input "x"',
      'x.yaml:19:92: pipelines[0].steps[0].loop.steps[0].reply.schema.enums: unknown keyword "enums" (did you mean "enum"?)',
      'x.yaml:19:116: pipelines[0].steps[0].loop.steps[0].reply.attempts: attempts must be 1–10',
      'x.yaml:20:55: pipelines[0].steps[1].map.maxConcurrency: maxConcurrency must be a whole number, 1–100',
    ]);
  });

  it('more problems than the listing limit are counted in one last line', () => {
    const teams = Array.from({ length: MAX_REPORTED_PROBLEMS + 50 }, (_, i) => `  - name: t${i}\n    colour: red`);
    const lines = problemLines(yaml(...HEAD, 'teams:', ...teams));
    expect(lines).toHaveLength(MAX_REPORTED_PROBLEMS + 1);
    expect(lines.at(-1)).toBe('x.yaml: … and 50 more problems');
  });
});

describe('definitions: hostile files get a clear error naming the file', () => {
  it('a file over the size limit is refused at once, naming its size and the limit', async () => {
    const { file, lines } = await loadProblems('#'.repeat(3 * 1024 * 1024));
    expect(lines).toEqual([`${file}:1:1: the file is 3 MiB, over the limit of 1 MiB for a definition (raise it with --max-file-size or TEAMCTL_MAX_FILE_SIZE)`]);
  });

  it('the size limit can be lowered', async () => {
    const { lines } = await loadProblems(yaml(...HEAD), 20);
    expect(lines[0]).toMatch(/the file is \d+ bytes, over the limit of 20 bytes for a definition/);
  });

  it('invalid UTF-8 is refused with the byte offset, line and column of the first bad byte', async () => {
    const bytes = Buffer.concat([Buffer.from('apiVersion: teamctl/v1\norganization:\n  name: caf'), Buffer.from([0xe9]), Buffer.from('\n')]);
    const { file, lines } = await loadProblems(bytes);
    expect(lines).toEqual([`${file}:3:12: not UTF-8: invalid byte 0xe9 at byte offset 48; save the file as UTF-8`]);
  });

  it('invalidUtf8Offset: accepts well-formed UTF-8 and finds overlong forms, surrogates and truncated sequences', () => {
    expect(invalidUtf8Offset(Buffer.from('grüße, 日本, 🙂'))).toBe(-1);
    expect(invalidUtf8Offset(Uint8Array.from([0x61, 0xc0, 0xaf]))).toBe(1); // overlong "/"
    expect(invalidUtf8Offset(Uint8Array.from([0xed, 0xa0, 0x80]))).toBe(0); // a UTF-16 surrogate
    expect(invalidUtf8Offset(Uint8Array.from([0x61, 0x62, 0xe2, 0x82]))).toBe(2); // cut short
    expect(invalidUtf8Offset(Uint8Array.from([0xf4, 0x90, 0x80, 0x80]))).toBe(0); // above U+10FFFF
  });

  it('a UTF-8 byte order mark is accepted', async () => {
    const file = join(await mkdtemp(join(tmpdir(), 'teamctl-bad-')), 'bom.yaml');
    await writeFile(file, `\uFEFF${yaml(...HEAD)}`);
    expect((await loadDefinitionFile(file)).organization.name).toBe('acme');
  });

  it('a tab in the indentation is one problem, the only one, at its line and column, not lost among the errors that follow from it', async () => {
    const text = yaml(...HEAD, 'teams:', '  - name: a', '    agents:', '\t  - name: x', '        provider: echo', '      - name: y');
    const { file, lines } = await loadProblems(text);
    expect(lines).toEqual([`${file}:7:1: a tab in the indentation: YAML indents with spaces only; replace it with spaces (errors that follow from it are not listed)`]);
    // One per tab, each where it is.
    const two = await loadProblems(yaml(...HEAD, 'teams:', '  - name: a', '    humans:', '    \t- name: h', '    agents:', '\t\t- name: x'));
    expect(two.lines.map((l) => l.slice(two.file.length))).toEqual([
      ':7:5: a tab in the indentation: YAML indents with spaces only; replace it with spaces (errors that follow from it are not listed)',
      ':9:1: a tab in the indentation: YAML indents with spaces only; replace it with spaces (errors that follow from it are not listed)',
    ]);
  });

  it('a tab inside a block scalar is text, not indentation: no problem', () => {
    const definition = parseDefinition(yaml(...HEAD, 'teams:', '  - name: a', '    description: |', '      first line', '      \tindented with a tab', '    agents: []'), 'x.yaml');
    expect(definition.teams[0]!.description).toBe('first line\n\tindented with a tab');
  });

  it('a second document gets our own message at the place it starts', () => {
    expect(problemLines(yaml(...HEAD, '---', 'apiVersion: teamctl/v1'))).toEqual([
      'x.yaml:4:1: one document per file: a second YAML document starts here (after ---); put it in a file of its own',
    ]);
  });

  it('nesting deeper than the limit is refused at the first node past it', () => {
    const lines = problemLines(yaml(...HEAD, `teams: ${'['.repeat(40)}${']'.repeat(40)}`));
    expect(lines).toEqual(['x.yaml:4:39: nested deeper than 32 levels (a definition rarely needs more than 16); refused']);
  });

  it('nesting too deep for the YAML parser is refused without a stack overflow', () => {
    const lines = problemLines(yaml(...HEAD, `teams: ${'['.repeat(200_000)}${']'.repeat(200_000)}`));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^x\.yaml:\d+:\d+: nested deeper than/);
  });

  it('an alias bomb is refused before it is expanded', () => {
    const levels = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
    for (const [prev, next] of [['a', 'b'], ['b', 'c'], ['c', 'd'], ['d', 'e'], ['e', 'f'], ['f', 'g'], ['g', 'h'], ['h', 'i']]) {
      levels.push(`${next}: &${next} [${Array(9).fill(`*${prev}`).join(',')}]`);
    }
    expect(problemLines(yaml(...levels))).toEqual(['x.yaml:1:1: more than 100 aliases (*name) to expand: refused as an alias bomb; write the values out']);
  });

  it('a huge value is quoted cut short, so the message stays one short line', () => {
    const lines = problemLines(yaml(...HEAD, 'teams:', '  - name: t', '    agents:', '      - name: a', `        provider: ${'x'.repeat(500_000)}`));
    expect(lines).toHaveLength(1);
    expect(lines[0]!.length).toBeLessThan(300);
    expect(lines[0]).toContain(`"${'x'.repeat(60)}…"`);
  });
});
