/**
 * What the tests of task steps (`task: true`) share: a definition whose `echo` agent answers at
 * once and whose `ext` agent is external (the tests act for it, or let its tasks wait: `ask-ext`
 * waits 2 minutes, `ask-ext-briefly` 2 seconds, `ask-ext-in-parallel` asks both at once, so that
 * the brief one fails the run while the other waits), and an organization with it applied on a running
 * acs-server.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { AcsClient } from '../../client/acs-client.ts';
import { runCli } from '../../cli/program.ts';
import { loadDefinitionFile } from '../../definitions/load.ts';
import type { RunningServer } from '../../service/index.ts';
import type { PipelineRunInput } from '../../workflows/pipeline-orchestration.ts';

/** The definition of these tests: echo answers at once; ext is an external agent the tests act for. */
export const TASKS_DEFINITION = (org: string) => `apiVersion: teamctl/v1
organization:
  name: ${org}
  providerKeys:
    echo: \${env:ECHO_PROVIDER_KEY}
teams:
  - name: desk
    agents:
      - { name: echo, provider: echo }
      - { name: ext }
    humans:
      - { name: dana }
    edges: [[dana, echo], [dana, ext]]
pipelines:
  - name: ask-echo
    team: desk
    inputs:
      topic: { type: string }
    steps:
      - id: ask
        from: dana
        to: echo
        task: true
        subject: "About {{ inputs.topic }}"
        content: "Tell me about {{ inputs.topic }}"
      - id: typed
        from: dana
        to: echo
        task: true
        content: "\`\`\`json\\n{\\"severity\\": \\"high\\", \\"topic\\": \\"{{ inputs.topic }}\\"}\\n\`\`\`"
        reply:
          schema:
            type: object
            properties:
              severity: { enum: [low, high] }
              topic: { type: string }
            required: [severity, topic]
      - id: after
        when: "steps.ask.task_id != '' && steps.typed.value.severity == 'high'"
        from: dana
        to: echo
        content: "task {{ steps.ask.task_id }} said {{ steps.typed.value.severity }}"
    output: "{{ steps.ask.task_id }}|{{ steps.ask.reply }}|{{ steps.after.reply }}"
  - name: ask-ext
    team: desk
    steps:
      - id: plan
        from: dana
        to: ext
        task: true
        subject: Plan the release
        content: Plan the release as JSON
        timeout: 2m
        reply:
          attempts: 2
          schema:
            type: object
            properties: { days: { type: integer, minimum: 1 } }
            required: [days]
    output: "{{ steps.plan.value.days }} days, task {{ steps.plan.task_id }}"
  - name: ask-ext-briefly
    team: desk
    steps:
      - id: plan
        from: dana
        to: ext
        task: true
        subject: Plan the release at once
        content: Plan the release within two seconds
        timeout: 2s
  - name: ask-ext-in-parallel
    team: desk
    steps:
      - parallel:
          - id: plan
            from: dana
            to: ext
            task: true
            subject: Plan the release
            content: Plan the release
            timeout: 2m
          - id: brief
            from: dana
            to: ext
            task: true
            subject: Brief the team at once
            content: Brief the team within two seconds
            timeout: 2s
`;

/** A new organization with the definition applied: its client, env, participant ids and the pipelines as run inputs. */
export async function taskOrganization(server: Pick<RunningServer, 'url' | 'provisionOrganization'>, name: string) {
  const { api_key: apiKey } = await server.provisionOrganization(name);
  const file = join(await mkdtemp(join(tmpdir(), 'teamctl-tasks-')), 'desk.yaml');
  await writeFile(file, TASKS_DEFINITION(name));
  const env = { ACS_API_KEY: apiKey, ECHO_PROVIDER_KEY: 'tasks-echo-key-1234' };
  const out: string[] = [];
  const code = await runCli(['apply', '-f', file], { env: { ...env, ACS_BASE_URL: server.url }, isTTY: false, stdout: (t) => void out.push(t), stderr: (t) => void out.push(t) });
  expect(code, out.join('\n')).toBe(0);
  const client = new AcsClient({ baseUrl: server.url, apiKey });
  const definition = await loadDefinitionFile(file);
  const org = (await client.listOrganizations()).find((o) => o.org_name === name)!;
  const team = (await client.listTeams(org.org_id))[0]!;
  const graph = await client.getTeam(team.team_id);
  const ids = Object.fromEntries([...graph.agents.map((a) => [a.name, a.agent_id]), ...graph.humans.map((h) => [h.name, h.human_id])]) as Record<string, string>;
  const input = (pipeline: string, inputs: PipelineRunInput['inputs'] = {}): PipelineRunInput & { runKey: string } => ({
    connection: { baseUrl: server.url, apiKeyEnv: 'ACS_API_KEY' },
    organization: name,
    pipeline: definition.pipelines.find((p) => p.name === pipeline)!,
    inputs,
    runKey: `local/${name}/${pipeline}/${Math.random()}`,
  });
  return { client, env, ids, teamId: team.team_id, input };
}

/** An organization of {@link taskOrganization}. */
export type TaskOrganization = Awaited<ReturnType<typeof taskOrganization>>;

/**
 * A `fetch` for a worker or the local engine that cannot reach the service for a task's cancel
 * only (`POST /tasks/{id}/cancel` rejects as a network failure does: retryable), counting each
 * attempt with `onCancel`; every other request goes through.
 */
export function failingCancelFetch(onCancel: () => void): typeof fetch {
  return (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    if (/\/tasks\/[^/]+\/cancel$/.test(new URL(url).pathname)) {
      onCancel();
      return Promise.reject(new TypeError('fetch failed'));
    }
    return fetch(input, init);
  };
}
