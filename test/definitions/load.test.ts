import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DefinitionError, loadDefinitionFile, parseDefinition } from '../../definitions/index.ts';
import { HEAD, problemLines, yaml } from './helpers.ts';

const EXAMPLE = fileURLToPath(new URL('../../examples/acme-research.yaml', import.meta.url));

describe('definitions: loading', () => {
  it('the example file validates with the expected structure', async () => {
    const definition = await loadDefinitionFile(EXAMPLE);
    expect(definition).toEqual({
      apiVersion: 'teamctl/v1',
      organization: { name: 'acme-research', providerKeys: { echo: '${env:ECHO_PROVIDER_KEY}' } },
      teams: [
        {
          name: 'literature-review',
          description: 'Finds and summarizes papers',
          agents: [
            {
              name: 'scout',
              provider: 'echo',
              model: 'echo-1',
              description: 'Finds papers',
              instructions: 'Find recent papers on the topic you are given.',
            },
            { name: 'archivist' },
          ],
          humans: [{ name: 'alice', email: 'alice@example.com' }],
          edges: [
            ['alice', 'scout'],
            ['scout', 'archivist'],
          ],
        },
      ],
      pipelines: [],
      schedules: [],
    });
  });

  it('a minimal definition gets empty lists by default and trimmed names', () => {
    const definition = parseDefinition(yaml(...HEAD, 'teams:', '  - name: "  t  "'), 'x.yaml');
    expect(definition.teams).toEqual([{ name: 't', agents: [], humans: [], edges: [] }]);
    expect(parseDefinition(yaml(...HEAD), 'x.yaml').teams).toEqual([]);
  });

  it('a missing file is reported as a DefinitionError naming the file', async () => {
    const error = await loadDefinitionFile('/nonexistent/teams.yaml').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DefinitionError);
    expect((error as DefinitionError).code).toBe('invalid_definition');
    expect((error as DefinitionError).message).toBe('/nonexistent/teams.yaml:1:1: cannot read the file: no such file');
  });
});

describe('definitions: schema problems', () => {
  it('an unknown key is reported with its line, column and a did-you-mean hint', () => {
    const text = yaml(...HEAD, 'teams:', '  - name: t', '    agents:', '      - name: a', '        provder: echo');
    expect(problemLines(text, 'examples/x.yaml')).toEqual([
      'examples/x.yaml:8:9: teams[0].agents[0].provder: unknown key "provder" (did you mean "provider"?)',
    ]);
  });

  it('an unknown key with no close match lists the accepted keys', () => {
    expect(problemLines(yaml(...HEAD, 'colour: blue'))).toEqual([
      'x.yaml:4:1: colour: unknown key "colour" (expected one of apiVersion, organization, teams, pipelines, schedules)',
    ]);
  });

  it('a value of the wrong type is reported at the value', () => {
    const text = yaml(...HEAD, 'teams:', '  - name: t', '    agents:', '      - name: a', '        model: 5');
    expect(problemLines(text)).toEqual(['x.yaml:8:16: teams[0].agents[0].model: expected a string, got a number']);
  });

  it('a missing required key is reported at the mapping that lacks it', () => {
    const text = yaml(...HEAD, 'teams:', '  - name: t', '    humans:', '      - email: a@example.com');
    expect(problemLines(text)).toEqual(['x.yaml:7:9: teams[0].humans[0]: missing required key "name"']);
  });

  it('a missing top-level key is reported at the document', () => {
    expect(problemLines(yaml('organization:', '  name: acme'))).toEqual([
      'x.yaml:1:1: missing required key "apiVersion"',
    ]);
  });

  it('an empty value is reported at its key', () => {
    expect(problemLines(yaml('apiVersion: teamctl/v1', 'organization:'))).toEqual([
      'x.yaml:2:1: organization: expected a mapping, got null (an empty value)',
    ]);
  });

  it('a name longer than 100 characters is reported with the limit', () => {
    const text = yaml(...HEAD, 'teams:', `  - name: ${'t'.repeat(101)}`);
    expect(problemLines(text)).toEqual(['x.yaml:5:11: teams[0].name: must be at most 100 characters, got 101']);
  });

  it('instructions longer than 4000 characters are reported with the limit', () => {
    const text = yaml(...HEAD, 'teams:', '  - name: t', '    agents:', '      - name: a', `        instructions: ${'i'.repeat(4001)}`);
    expect(problemLines(text)).toEqual([
      'x.yaml:8:23: teams[0].agents[0].instructions: must be at most 4000 characters, got 4001',
    ]);
  });

  it('an unknown provider of an agent is reported with a did-you-mean hint', () => {
    const text = yaml(...HEAD, 'teams:', '  - name: t', '    agents:', '      - name: a', '        provider: opnai');
    expect(problemLines(text)).toEqual([
      'x.yaml:8:19: teams[0].agents[0].provider: unknown provider "opnai" (did you mean "openai"?)',
    ]);
  });

  it('an unknown provider under providerKeys is reported at the key', () => {
    const text = yaml(...HEAD, '  providerKeys:', '    antropic: ${env:KEY}');
    expect(problemLines(text)).toEqual([
      'x.yaml:5:5: organization.providerKeys.antropic: unknown provider "antropic" (did you mean "anthropic"?)',
    ]);
  });

  it('a literal secret instead of a reference is reported without repeating the secret', () => {
    const text = yaml(...HEAD, '  providerKeys:', '    echo: sk-live-abcdef123456');
    const lines = problemLines(text);
    expect(lines).toEqual([
      'x.yaml:5:11: organization.providerKeys.echo: provider keys must be references like ${env:NAME}; never put the key itself in the file',
    ]);
    expect(lines.join('\n')).not.toContain('abcdef');
  });

  it('a malformed reference is refused like a literal secret', () => {
    const text = yaml(...HEAD, '  providerKeys:', '    echo: ${env:MY-KEY}');
    expect(problemLines(text)[0]).toMatch(/^x\.yaml:5:11: organization\.providerKeys\.echo: provider keys must be references/);
  });

  it('a wrong apiVersion is reported with the supported one', () => {
    expect(problemLines(yaml('apiVersion: teamctl/v2', 'organization:', '  name: acme'))).toEqual([
      'x.yaml:1:13: apiVersion: must be "teamctl/v1", got "teamctl/v2"',
    ]);
  });

  it('an edge that is not a pair is reported at the edge', () => {
    const text = yaml(...HEAD, 'teams:', '  - name: t', '    edges:', '      - [a, b, c]');
    expect(problemLines(text)).toEqual(['x.yaml:7:9: teams[0].edges[0]: an edge joins exactly two participants, got 3']);
  });

  it('an empty document is reported at its start', () => {
    expect(problemLines('')).toEqual([
      'x.yaml:1:1: the document is empty; expected a mapping with apiVersion, organization and teams',
    ]);
  });
});

describe('definitions: YAML syntax', () => {
  it('a YAML syntax error is reported with its line and column', () => {
    const text = yaml(...HEAD, 'teams:', '  - name: [t');
    const lines = problemLines(text);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^x\.yaml:6:1: .*Flow sequence/);
  });

  it('a duplicate key is a YAML error at the second key', () => {
    expect(problemLines(yaml(...HEAD, '  name: other'))).toEqual(['x.yaml:4:3: Map keys must be unique']);
  });
});

describe('definitions: cross-field rules', () => {
  const team = (...lines: string[]) => yaml(...HEAD, 'teams:', '  - name: t', ...lines);

  it('a duplicate team name is reported at the second name', () => {
    const text = yaml(...HEAD, 'teams:', '  - name: t', '  - name: u', '  - name: t');
    expect(problemLines(text)).toEqual(['x.yaml:7:11: teams[2].name: duplicate team name "t" (first used by teams[0])']);
  });

  it('a human with the name of an agent of the same team is a duplicate participant', () => {
    const text = team('    agents:', '      - name: alice', '    humans:', '      - name: alice');
    expect(problemLines(text)).toEqual([
      'x.yaml:9:15: teams[0].humans[0].name: duplicate participant name "alice" in team t (first used by agents[0]; agents and humans share one namespace)',
    ]);
  });

  it('the same participant name in two teams is fine', () => {
    const text = yaml(...HEAD, 'teams:', '  - name: t', '    humans: [{name: alice}]', '  - name: u', '    humans: [{name: alice}]');
    expect(parseDefinition(text, 'x.yaml').teams).toHaveLength(2);
  });

  it('an edge to an unknown participant is reported at that end', () => {
    const text = team('    humans:', '      - name: alice', '    edges:', '      - [alice, bob]');
    expect(problemLines(text)).toEqual(['x.yaml:9:17: teams[0].edges[0][1]: unknown participant "bob" in team t']);
  });

  it('an edge to a misspelt participant gets a did-you-mean hint', () => {
    const text = team('    humans:', '      - name: alice', '    agents:', '      - name: scout', '    edges:', '      - [alice, scuot]');
    expect(problemLines(text)).toEqual([
      'x.yaml:11:17: teams[0].edges[0][1]: unknown participant "scuot" in team t (did you mean "scout"?)',
    ]);
  });

  it('a self-edge is reported at the edge', () => {
    const text = team('    humans:', '      - name: alice', '    edges:', '      - [alice, alice]');
    expect(problemLines(text)).toEqual(['x.yaml:9:9: teams[0].edges[0]: an edge cannot join "alice" to itself']);
  });

  it('an edge repeated in reverse order is a duplicate pair', () => {
    const text = team('    humans:', '      - name: alice', '      - name: bob', '    edges:', '      - [alice, bob]', '      - [bob, alice]');
    expect(problemLines(text)).toEqual([
      'x.yaml:11:9: teams[0].edges[1]: duplicate edge between "bob" and "alice" (same as edges[0]; edges have no direction)',
    ]);
  });

  it('a model on an agent without a provider is reported at the model', () => {
    const text = team('    agents:', '      - name: a', '        model: gpt-4o');
    expect(problemLines(text)).toEqual([
      'x.yaml:8:16: teams[0].agents[0].model: a model needs a provider; an agent without a provider is external (MCP) and runs no model',
    ]);
  });

  it('the echo provider without a model is fine', () => {
    const text = team('    agents:', '      - name: a', '        provider: echo');
    expect(parseDefinition(text, 'x.yaml').teams[0]?.agents[0]).toEqual({ name: 'a', provider: 'echo' });
  });

  it('a provider other than echo without a model is reported at the provider', () => {
    const text = team('    agents:', '      - name: a', '        provider: anthropic', '      - name: b', '        provider: openai', '        model: gpt-4o-mini');
    expect(problemLines(text)).toEqual(['x.yaml:8:19: teams[0].agents[0].provider: provider anthropic needs a model (add model: …; only echo runs without one)']);
  });

  it('a daily token budget is a positive integer; anything else is reported at it', () => {
    const ok = team('    agents:', '      - name: a', '        provider: echo', '        maxTokensPerDay: 200000');
    expect(parseDefinition(ok, 'x.yaml').teams[0]?.agents[0]).toEqual({ name: 'a', provider: 'echo', maxTokensPerDay: 200_000 });
    const bad = team('    agents:', '      - name: a', '        provider: echo', '        maxTokensPerDay: 0', '      - name: b', '        maxTokensPerDay: lots');
    expect(problemLines(bad)).toEqual([
      'x.yaml:9:26: teams[0].agents[0].maxTokensPerDay: maxTokensPerDay must be 1–2,000,000,000',
      'x.yaml:11:26: teams[0].agents[1].maxTokensPerDay: expected a number, got a string',
    ]);
  });
});

describe('definitions: several problems', () => {
  it('a definition with several problems reports all of them, in file order', () => {
    const text = yaml(
      'apiVersion: teamctl/v1',
      'organization:',
      '  name: acme',
      '  providerKeys:',
      '    echo: literal-key',
      'teams:',
      '  - name: t',
      '    agents:',
      '      - nmae: a',
      '        provider: echo',
      '        status: sleeping',
    );
    let error: unknown;
    try {
      parseDefinition(text, 'x.yaml');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(DefinitionError);
    const definitionError = error as DefinitionError;
    expect(definitionError.code).toBe('invalid_definition');
    expect(definitionError.problems.map((p) => [p.line, p.column, p.path])).toEqual([
      [5, 11, 'organization.providerKeys.echo'],
      [9, 9, 'teams[0].agents[0]'],
      [9, 9, 'teams[0].agents[0].nmae'],
      [11, 17, 'teams[0].agents[0].status'],
    ]);
    expect(definitionError.message.split('\n')).toEqual([
      'x.yaml:5:11: organization.providerKeys.echo: provider keys must be references like ${env:NAME}; never put the key itself in the file',
      'x.yaml:9:9: teams[0].agents[0]: missing required key "name"',
      'x.yaml:9:9: teams[0].agents[0].nmae: unknown key "nmae" (did you mean "name"?)',
      'x.yaml:11:17: teams[0].agents[0].status: invalid value "sleeping" (expected one of active, paused)',
    ]);
  });

  it('several cross-field problems are reported at once', () => {
    const text = yaml(...HEAD, 'teams:', '  - name: t', '    humans: [{name: a}, {name: a}]', '    edges: [[a, x], [a, a]]');
    expect(problemLines(text)).toHaveLength(3);
  });
});

describe('definitions: lifecycle keys', () => {
  it('protect and renamedFrom are accepted on the organization, teams, agents and humans (renamedFrom not on the organization)', () => {
    const definition = parseDefinition(
      yaml(
        'apiVersion: teamctl/v1',
        'organization:',
        '  name: acme',
        '  protect: true',
        'teams:',
        '  - name: front',
        '    renamedFrom: intake',
        '    protect: true',
        '    agents:',
        '      - { name: sorter, renamedFrom: triager, protect: false }',
        '    humans:',
        '      - { name: dana, protect: true }',
      ),
      'x.yaml',
    );
    expect(definition.organization).toEqual({ name: 'acme', protect: true });
    expect(definition.teams[0]).toMatchObject({ name: 'front', renamedFrom: 'intake', protect: true, agents: [{ name: 'sorter', renamedFrom: 'triager', protect: false }], humans: [{ name: 'dana', protect: true }] });
    expect(problemLines(yaml(...HEAD, '  renamedFrom: old'), 'x.yaml')).toEqual(['x.yaml:4:3: organization.renamedFrom: unknown key "renamedFrom" (expected one of name, protect, providerKeys, webhooks)']);
    expect(problemLines(yaml(...HEAD, 'teams:', '  - name: t', '    protect: yes please'), 'x.yaml')).toEqual([expect.stringMatching(/^x\.yaml:6:14: teams\[0\]\.protect: /)]);
  });

  it('renamedFrom must name what the resource was called before: not a name the file keeps, nor a name claimed twice', () => {
    const text = yaml(
      ...HEAD,
      'teams:',
      '  - name: a',
      '  - name: b',
      '    renamedFrom: a',
      '    agents:',
      '      - { name: x, renamedFrom: x }',
      '      - { name: y, renamedFrom: old }',
      '    humans:',
      '      - { name: z, renamedFrom: old }',
    );
    expect(problemLines(text, 'x.yaml')).toEqual([
      'x.yaml:7:18: teams[1].renamedFrom: renamedFrom "a" is the name of another entry (the teams of this file keep it): it must name what the resource was called before',
      'x.yaml:9:33: teams[1].agents[0].renamedFrom: renamedFrom "x" is its own name: it must name what the resource was called before',
      'x.yaml:12:33: teams[1].humans[0].renamedFrom: renamedFrom "old" is claimed twice (also by agents[1])',
    ]);
  });
});
