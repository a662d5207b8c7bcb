import { describe, expect, it } from 'vitest';
import { parseDefinition } from '../../definitions/index.ts';
import { desiredState } from '../../plan/desired.ts';
import { HEAD, problemLines, yaml } from './helpers.ts';

// Remote A2A agents in definition files (issue 38, teamctl side): `a2a: {url, headers?}` read with
// header values as references only, and refused beside a provider, a model or tools, each problem
// at its place.

/** A team `desk` (lines 4–…): agent `scout` (line 7) with the given lines under it (line 8 on), human dana, edge dana–scout. */
function desk(scout: string[]): string {
  return yaml(...HEAD, 'teams:', '  - name: desk', '    agents:', '      - name: scout', ...scout.map((line) => `        ${line}`), '    humans:', '      - name: dana', '    edges:', '      - [dana, scout]');
}

const A2A = ['a2a:', '  url: https://Scout.example/agents/scout', '  headers:', '    Authorization: Bearer ${env:SCOUT_TOKEN}'];

describe('definitions: remote A2A agents', () => {
  it('definitions: a2a is read with its URL normalized and its header value kept as its reference; the desired state holds the template, never a value', () => {
    const definition = parseDefinition(desk(A2A), 'x.yaml');
    expect(definition.teams[0]!.agents[0]).toEqual({ name: 'scout', a2a: { url: 'https://scout.example/agents/scout', headers: { Authorization: 'Bearer ${env:SCOUT_TOKEN}' } } });
    expect(desiredState(definition).teams[0]!.agents[0]!.fields).toMatchObject({
      provider: null,
      model: null,
      tools: null,
      a2a: { url: 'https://scout.example/agents/scout', headers: { Authorization: 'Bearer ${env:SCOUT_TOKEN}' } },
    });
  });

  it('definitions: an agent without a2a has a2a null in its desired state', () => {
    const definition = parseDefinition(desk(['provider: echo']), 'x.yaml');
    expect(desiredState(definition).teams[0]!.agents[0]!.fields.a2a).toBeNull();
  });

  it('validate: a2a beside provider, model and tools is refused at each of those keys, saying the agent is remote', () => {
    const lines = problemLines(desk(['provider: openai', 'model: gpt-4o-mini', 'tools:', '  team: true', ...A2A]));
    expect(lines).toEqual([
      'x.yaml:8:9: teams[0].agents[0].provider: agent "scout" has a2a: it is a remote A2A agent, which runs its own model and tools, and takes no provider (remove provider, or remove a2a to run a model in the service)',
      'x.yaml:9:9: teams[0].agents[0].model: agent "scout" has a2a: it is a remote A2A agent, which runs its own model and tools, and takes no model (remove model, or remove a2a to run a model in the service)',
      'x.yaml:10:9: teams[0].agents[0].tools: agent "scout" has a2a: it is a remote A2A agent, which runs its own model and tools, and takes no tools (remove tools, or remove a2a to run a model in the service)',
    ]);
  });

  it('validate: a model on a remote agent is refused once, for being on a remote agent', () => {
    const lines = problemLines(desk(['model: gpt-4o-mini', ...A2A]));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^x\.yaml:8:9: teams\[0\]\.agents\[0\]\.model: agent "scout" has a2a: .* takes no model/);
  });

  it('validate: a plain http URL is accepted for a loopback host only; a header named twice in another case is refused', () => {
    expect(() => parseDefinition(desk(['a2a:', '  url: http://127.0.0.1:9/scout']), 'x.yaml')).not.toThrow();
    expect(problemLines(desk(['a2a:', '  url: http://scout.example/', '  headers:', '    Authorization: Bearer ${env:A}', '    authorization: ${env:OTHER}']))).toEqual([
      'x.yaml:9:16: teams[0].agents[0].a2a.url: must be https: plain http is accepted only for a loopback host (localhost, 127.0.0.0/8, ::1), for development, with a server run with --webhook-allow-private',
      'x.yaml:12:13: teams[0].agents[0].a2a.headers.authorization: header "authorization" is named twice (also as "Authorization"; header names are case-insensitive)',
    ]);
  });

  it('validate: a header value that is no reference is refused at its place without being quoted', () => {
    const lines = problemLines(desk(['a2a:', '  url: https://scout.example/', '  headers:', '    Authorization: Bearer s3cr3t']));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^x\.yaml:11:28: teams\[0\]\.agents\[0\]\.a2a\.headers\.Authorization: header values are secrets/);
    expect(lines[0]).not.toContain('s3cr3t');
  });

  it('validate: a URL that is not http(s) and an unknown key under a2a are refused at their places', () => {
    expect(problemLines(desk(['a2a:', '  url: ftp://scout.example/', '  token: x']))).toEqual([
      'x.yaml:9:16: teams[0].agents[0].a2a.url: must be an http or https URL (https://host/path)',
      'x.yaml:10:11: teams[0].agents[0].a2a.token: unknown key "token" (expected one of url, headers)',
    ]);
  });
});
