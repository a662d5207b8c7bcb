import { describe, expect, it } from 'vitest';
import { parseDefinition } from '../../definitions/index.ts';
import { durationSeconds, formatSeconds } from '../../definitions/durations.ts';
import { isSecretTemplate, resolveSecretTemplate, templateVariables } from '../../definitions/secrets.ts';
import { HEAD, problemLines, yaml } from './helpers.ts';

// Agents' maxSteps and tools in definition files (issue 37, teamctl side): read with their
// defaults, header values as references only, and every cross-key rule of contract §11 reported
// at its place with a did-you-mean where a name is involved.

/**
 * A team `desk` (lines 4–…): agent `lead` (openai) with `tools` given as YAML lines indented under
 * `tools:` (line 10 on), a human `dana`, an agent `researcher`, and edges dana–lead, lead–researcher.
 */
function desk(tools: string[], extra: { humans?: string[]; edges?: string[]; lead?: string[] } = {}): string {
  return yaml(
    ...HEAD,
    'teams:',
    '  - name: desk',
    '    agents:',
    '      - name: lead',
    '        provider: openai',
    '        model: gpt-4o-mini',
    ...(extra.lead ?? []),
    '        tools:',
    ...tools.map((line) => `          ${line}`),
    '      - name: researcher',
    '    humans:',
    ...(extra.humans ?? ['      - name: dana', '      - name: erin']),
    '    edges:',
    ...(extra.edges ?? ['      - [dana, lead]', '      - [lead, researcher]']),
  );
}

describe('definitions: agents\' tools', () => {
  it('definitions: maxSteps and tools are read as written, header values kept as their references', () => {
    const definition = parseDefinition(
      desk(
        [
          'team: true',
          'askTimeout: 24h',
          'toolTimeout: 90s',
          'mcp:',
          '  - name: tracker',
          '    url: https://MCP.tracker.example/mcp',
          '    headers:',
          '      Authorization: Bearer ${env:TRACKER_TOKEN}',
          '    allow: [search_issues, create_issue]',
          'approval:',
          '  by: dana',
          '  tools: [tracker.create_issue, send_message]',
        ],
        { lead: ['        maxSteps: 12'] },
      ),
      'x.yaml',
    );
    expect(definition.teams[0]!.agents[0]).toEqual({
      name: 'lead',
      provider: 'openai',
      model: 'gpt-4o-mini',
      maxSteps: 12,
      tools: {
        team: true,
        askTimeout: '24h',
        toolTimeout: '90s',
        mcp: [{ name: 'tracker', url: 'https://mcp.tracker.example/mcp', headers: { Authorization: 'Bearer ${env:TRACKER_TOKEN}' }, allow: ['search_issues', 'create_issue'] }],
        approval: { by: 'dana', tools: ['tracker.create_issue', 'send_message'] },
      },
    });
  });

  it('definitions: a header value without a ${env:NAME} reference is refused at its place, and the message never repeats the value', () => {
    const lines = problemLines(desk(['mcp:', '  - name: tracker', '    url: https://mcp.tracker.example/mcp', '    headers:', '      Authorization: Bearer s3cr3t-t0ken-value', '      X-Team: ${env:bad-name}']));
    expect(lines).toEqual([
      expect.stringMatching(/^x\.yaml:15:32: teams\[0\]\.agents\[0\]\.tools\.mcp\[0\]\.headers\.Authorization: header values are secrets: write each with at least one reference like \$\{env:NAME\}/),
      expect.stringMatching(/^x\.yaml:16:25: teams\[0\]\.agents\[0\]\.tools\.mcp\[0\]\.headers\.X-Team: header values are secrets/),
    ]);
    expect(lines.join('\n')).not.toContain('s3cr3t');
  });

  it('definitions: askTimeout and toolTimeout are durations of whole seconds, at most 30 days and from 1 to 600 seconds', () => {
    const lines = problemLines(desk(['askTimeout: 31d', 'toolTimeout: 601s']));
    expect(lines).toEqual([
      'x.yaml:11:23: teams[0].agents[0].tools.askTimeout: must be from 1s to 30d, got 31d',
      'x.yaml:12:24: teams[0].agents[0].tools.toolTimeout: must be from 1s to 10m, got 601s',
    ]);
    for (const bad of ['1.5s', '60', '1500ms', 'soon']) {
      expect(problemLines(desk([`toolTimeout: "${bad}"`]))).toEqual([expect.stringContaining('toolTimeout: must be a duration of whole seconds with a unit, such as 24h, 30m or 90s (from 1s to 10m)')]);
    }
    expect(parseDefinition(desk(['askTimeout: 30d', 'toolTimeout: 10m']), 'x.yaml').teams[0]!.agents[0]!.tools).toEqual({ askTimeout: '30d', toolTimeout: '10m' });
  });

  it('definitions: approval.by must be a human of the team who shares an edge with the agent, with a did-you-mean', () => {
    expect(problemLines(desk(['approval:', '  by: dna', '  tools: [ask]', 'team: true']))).toEqual([
      'x.yaml:12:17: teams[0].agents[0].tools.approval.by: unknown human "dna" in team desk (did you mean "dana"?)',
    ]);
    expect(problemLines(desk(['approval:', '  by: researcher', '  tools: [ask]', 'team: true']))).toEqual([
      'x.yaml:12:17: teams[0].agents[0].tools.approval.by: "researcher" is an agent: approvals are given by a human of team desk (expected one of dana, erin)',
    ]);
    expect(problemLines(desk(['approval:', '  by: erin', '  tools: [ask]', 'team: true']))).toEqual([
      'x.yaml:12:17: teams[0].agents[0].tools.approval.by: human "erin" shares no edge with agent "lead": approvals are asked in a thread on their edge (add [erin, lead] to edges)',
    ]);
    expect(parseDefinition(desk(['approval:', '  by: dana', '  tools: [ask]', 'team: true']), 'x.yaml').teams[0]!.agents[0]!.tools?.approval).toEqual({ by: 'dana', tools: ['ask'] });
  });

  it('definitions: an approval tool names a server of mcp and a tool its allow lists, or a team tool with team: true; each problem points at the name', () => {
    const lines = problemLines(
      desk([
        'mcp:',
        '  - name: tracker',
        '    url: https://mcp.tracker.example/mcp',
        '    allow: [search_issues, create_issue]',
        '  - name: wiki',
        '    url: https://wiki.example/mcp',
        'approval:',
        '  by: dana',
        '  tools: [trackr.create_issue, tracker.create_isue, send_mesage, send_message, wiki.anything]',
      ]),
    );
    expect(lines).toEqual([
      'x.yaml:19:21: teams[0].agents[0].tools.approval.tools[0]: "trackr" is none of the agent\'s MCP servers (did you mean "tracker"?)',
      'x.yaml:19:50: teams[0].agents[0].tools.approval.tools[1]: "create_isue" is not among the tools allowed on tracker (did you mean "create_issue"?)',
      'x.yaml:19:63: teams[0].agents[0].tools.approval.tools[2]: unknown team tool "send_mesage" (did you mean "send_message"?); a remote server\'s tool is SERVER.TOOL',
      'x.yaml:19:76: teams[0].agents[0].tools.approval.tools[3]: send_message is a team tool, and the agent has no team tools (set team: true under tools)',
    ]);
    expect(problemLines(desk(['approval:', '  by: dana', '  tools: [tracker.search]']))).toEqual([
      'x.yaml:13:21: teams[0].agents[0].tools.approval.tools[0]: "tracker" is none of the agent\'s MCP servers (the agent has no MCP servers)',
    ]);
  });

  it('definitions: tools on an agent without a provider, a server named twice, a header named twice in another case and plain http to a host that is not loopback are refused', () => {
    const text = yaml(
      ...HEAD,
      'teams:',
      '  - name: desk',
      '    agents:',
      '      - name: bot',
      '        tools:',
      '          mcp:',
      '            - name: tracker',
      '              url: http://mcp.tracker.example/mcp',
      '              headers:',
      '                Authorization: Bearer ${env:A}',
      '                authorization: Bearer ${env:B}',
      '            - name: tracker',
      '              url: http://localhost:8931/mcp',
    );
    expect(problemLines(text)).toEqual([
      'x.yaml:8:9: teams[0].agents[0].tools: only an agent with a provider calls tools; an agent without one is external and acts over MCP with its own tools (add provider: …, or remove tools)',
      'x.yaml:11:20: teams[0].agents[0].tools.mcp[0].url: must be https: plain http is accepted only for a loopback host (localhost, 127.0.0.0/8, ::1), for development, with a server run with --webhook-allow-private',
      'x.yaml:14:17: teams[0].agents[0].tools.mcp[0].headers.authorization: header "authorization" is named twice (also as "Authorization"; header names are case-insensitive)',
      'x.yaml:15:21: teams[0].agents[0].tools.mcp[1].name: duplicate MCP server name "tracker" (first used by mcp[0])',
    ]);
  });

  it('definitions: plain http is accepted for localhost, 127.0.0.0/8 and ::1', () => {
    for (const url of ['http://localhost:8931/mcp', 'http://127.0.0.2/mcp', 'http://[::1]:3000/mcp', 'https://mcp.example.com/mcp']) {
      const tools = parseDefinition(desk(['mcp:', '  - name: local', `    url: ${url}`]), 'x.yaml').teams[0]!.agents[0]!.tools;
      expect(tools?.mcp?.[0]?.url, url).toBe(new URL(url).href);
    }
  });

  it('definitions: a header the MCP transport sets, an empty allow, an unknown key and a URL without a scheme get messages that say what is allowed', () => {
    const lines = problemLines(desk(['teem: true', 'mcp:', '  - name: tracker', '    url: mcp.tracker.example', '    headers:', '      Content-Type: ${env:X}', '    allow: []']));
    expect(lines).toEqual([
      'x.yaml:11:11: teams[0].agents[0].tools.teem: unknown key "teem" (did you mean "team"?)',
      'x.yaml:14:20: teams[0].agents[0].tools.mcp[0].url: must be an http or https URL (https://host/path)',
      'x.yaml:16:17: teams[0].agents[0].tools.mcp[0].headers.Content-Type: invalid name "Content-Type": is set by the MCP transport itself (Host, Content-Type, Content-Length, Accept, Connection, Transfer-Encoding, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID)',
      'x.yaml:17:22: teams[0].agents[0].tools.mcp[0].allow: must not be empty: leave allow out to allow every tool the server lists',
    ]);
  });

  it('definitions: maxSteps is an integer from 1 to 100', () => {
    expect(problemLines(desk(['team: true'], { lead: ['        maxSteps: 101'] }))).toEqual([expect.stringContaining('x.yaml:10:19: teams[0].agents[0].maxSteps:')]);
    expect(parseDefinition(desk(['team: true'], { lead: ['        maxSteps: 100'] }), 'x.yaml').teams[0]!.agents[0]!.maxSteps).toBe(100);
  });

  it('definitions: a team that lost a participant to the schema reports no approver of its agents (it cannot tell who is missing), but the rest of the file\'s problems', () => {
    const text = desk(['approval:', '  by: dana', '  tools: [tracker.x]'], { humans: ['      - name: dana', '        email: not-an-email'] });
    const lines = problemLines(text);
    expect(lines.some((line) => line.includes('approval.by'))).toBe(false);
    expect(lines).toEqual(expect.arrayContaining([expect.stringContaining('humans[0].email'), expect.stringContaining('"tracker" is none of the agent\'s MCP servers')]));
  });
});

describe('definitions: secret templates and durations', () => {
  it('a secret template holds at least one reference, every ${ a reference, on one line', () => {
    for (const ok of ['${env:A}', 'Bearer ${env:TRACKER_TOKEN}', '${env:USER}:${env:PASS}', 'cost: $5 ${env:A}']) expect(isSecretTemplate(ok), ok).toBe(true);
    for (const bad of ['Bearer token', '${env:A-B}', 'Bearer ${env:A} ${TOKEN}', '${env:A}\nX', '']) expect(isSecretTemplate(bad), bad).toBe(false);
    expect(templateVariables('${env:USER}:${env:PASS}@${env:USER}')).toEqual(['USER', 'PASS']);
  });

  it('resolveSecretTemplate puts each variable\'s value in place and keeps the text around it', () => {
    expect(resolveSecretTemplate('Bearer ${env:T}', { T: 'abc$&def' })).toBe('Bearer abc$&def');
    expect(resolveSecretTemplate('${env:U}:${env:P}', { U: 'u', P: 'p' })).toBe('u:p');
  });

  it('resolveSecretTemplate raises unresolved_secret naming the unset variable and no value, and invalid_definition for a value that is no template', () => {
    const error = (() => {
      try {
        resolveSecretTemplate('Bearer ${env:SET} ${env:UNSET}', { SET: 'sk-set-value-1234' });
      } catch (e) {
        return e as Error & { code: string };
      }
      return undefined;
    })();
    expect(error?.code).toBe('unresolved_secret');
    expect(error?.message).toContain('UNSET');
    expect(error?.message).not.toContain('sk-set-value');
    expect(() => resolveSecretTemplate('Bearer sk-literal-9999', {})).toThrow(expect.objectContaining({ code: 'invalid_definition', message: expect.not.stringContaining('9999') }));
  });

  it('durations: whole seconds of a duration, and seconds written in the largest exact unit', () => {
    expect([durationSeconds('24h'), durationSeconds('90s'), durationSeconds('1.5m'), durationSeconds('1500ms'), durationSeconds('60')]).toEqual([86_400, 90, 90, undefined, undefined]);
    expect([86_400, 7_200, 90, 120, 600, 2_592_000, 1].map(formatSeconds)).toEqual(['1d', '2h', '90s', '2m', '10m', '30d', '1s']);
    for (const seconds of [1, 59, 61, 3_599, 3_600, 86_399, 86_400, 2_592_000]) expect(durationSeconds(formatSeconds(seconds))).toBe(seconds);
  });
});
