/**
 * The local engine's waits (engine/stream-waits.ts) against a real acs-server: a run's waiting
 * steps — parallel ones, and one after the other — wait on one event stream of the organization
 * for the whole run, not one long poll each; a service without an event log falls back to long
 * polls; a wait that outlasts its timeout fails as before.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConversationActivities } from '../../activities/conversation-activities.ts';
import { AcsClient } from '../../client/acs-client.ts';
import { runCli } from '../../cli/program.ts';
import { loadDefinitionFile } from '../../definitions/load.ts';
import { runPipelineLocally } from '../../engine/local-engine.ts';
import { startServer } from '../../service/index.ts';
import type { PipelineRunInput, ProgressEvent } from '../../workflows/pipeline-orchestration.ts';
import { recordingFetch } from '../support/fetch.ts';

const DEFINITION = (org: string) => `apiVersion: teamctl/v1
organization:
  name: ${org}
  providerKeys:
    echo: \${env:ECHO_PROVIDER_KEY}
teams:
  - name: desk
    agents:
      - { name: writer, provider: echo }
      - { name: reviewer, provider: echo }
    humans:
      - { name: dana }
    edges: [[dana, writer], [dana, reviewer]]
pipelines:
  - name: waits
    team: desk
    steps:
      - parallel:
          - { id: ask-a, from: writer, to: dana, content: "A?" }
          - { id: ask-b, from: reviewer, to: dana, content: "B?" }
      - { id: again, thread: ask-a, from: writer, content: "And once more?" }
      - { id: summary, from: dana, to: writer, content: "Summarize {{ steps.ask-a.reply }} and {{ steps.ask-b.reply }}" }
    output: "{{ steps.summary.reply }}"
  - name: hurry
    team: desk
    steps:
      - { id: ask, from: writer, to: dana, content: "Quick?", timeout: 2s }
`;

let server: Awaited<ReturnType<typeof startServer>>;
beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 50, logger: false, rateLimit: false });
});
afterAll(async () => {
  await server?.close();
});

/** A new organization with the definition applied: its client, env, dana's id and the pipelines. */
async function organization(name: string) {
  const { api_key: apiKey } = await server.provisionOrganization(name);
  const file = join(await mkdtemp(join(tmpdir(), 'teamctl-stream-')), 'desk.yaml');
  await writeFile(file, DEFINITION(name));
  const env = { ACS_API_KEY: apiKey, ECHO_PROVIDER_KEY: 'stream-echo-key-1234' };
  const out: string[] = [];
  const code = await runCli(['apply', '-f', file], { env: { ...env, ACS_BASE_URL: server.url }, isTTY: false, stdout: (t) => void out.push(t), stderr: (t) => void out.push(t) });
  expect(code, out.join('\n')).toBe(0);
  const client = new AcsClient({ baseUrl: server.url, apiKey });
  const definition = await loadDefinitionFile(file);
  const org = (await client.listOrganizations()).find((o) => o.org_name === name)!;
  const team = (await client.listTeams(org.org_id))[0]!;
  const dana = (await client.getTeam(team.team_id)).humans[0]!.human_id;
  const input = (pipeline: string): PipelineRunInput & { runKey: string } => ({
    connection: { baseUrl: server.url, apiKeyEnv: 'ACS_API_KEY' },
    organization: name,
    pipeline: definition.pipelines.find((p) => p.name === pipeline)!,
    inputs: {},
    runKey: `local/${name}/${pipeline}/${Math.random()}`,
  });
  return { client, env, dana, input };
}

/** Answers, as dana, every step that waits for her (by the progress events), once each. */
function danaAnswers(org: Awaited<ReturnType<typeof organization>>, answer: (stepId: string) => string) {
  const answered = new Set<string>();
  return (event: ProgressEvent) => {
    const step = event.step;
    if (step.status !== 'running' || step.awaiting !== 'dana' || !step.thread_id || !step.wait_mode || answered.has(step.id)) return;
    answered.add(step.id);
    void org.client.appendMessage(step.thread_id, { sender_agent_id: org.dana, content: answer(step.id) });
  };
}

describe('stream waits (local engine)', () => {
  it('local: parallel and successive waiting steps all wait on one event stream of the run, with no long poll; each gets its own reply', async () => {
    const org = await organization('stream-one');
    const recorded = recordingFetch();
    const longPolls: string[] = [];
    const watching: typeof fetch = (input, init) => {
      const url = new URL(String(input));
      if (url.pathname.startsWith('/api/v1/threads/') && Number(url.searchParams.get('wait') ?? 0) > 0) longPolls.push(url.pathname);
      return recorded.fetch(input, init);
    };
    const modes: string[] = [];
    const answer = danaAnswers(org, (id) => `answer to ${id}`);
    const result = await runPipelineLocally(org.input('waits'), createConversationActivities({ env: org.env, fetch: watching }), {
      streamWaits: { env: org.env, fetch: watching },
      onProgress: (event) => {
        if (event.step.wait_mode) modes.push(`${event.step.id}:${event.step.wait_mode}`);
        answer(event);
      },
    });
    const byId = Object.fromEntries(result.steps.map((s) => [s.id, s.reply]));
    expect(byId).toEqual({ 'ask-a': 'answer to ask-a', 'ask-b': 'answer to ask-b', again: 'answer to again', summary: 'echo: Summarize answer to ask-a and answer to ask-b' });
    // Dana answers only once a step says it waits; the echo agent may answer `summary` before its
    // wait begins (the send's own read finds the reply, and nothing waits), else it waits on the stream too.
    expect(new Set(modes.filter((m) => !m.startsWith('summary:')))).toEqual(new Set(['ask-a:stream', 'ask-b:stream', 'again:stream']));
    expect(modes.filter((m) => m.startsWith('summary:') && m !== 'summary:stream')).toEqual([]);
    expect(recorded.requests.filter((r) => r.endsWith('/events/stream'))).toHaveLength(1);
    // Thread reads happen (each send's read), but none holds the request: no long poll.
    expect(recorded.requests.some((r) => r.startsWith('GET /api/v1/threads/'))).toBe(true);
    expect(longPolls).toEqual([]);
  }, 120_000);

  it('local: against a service without an event log (its routes 404) the steps wait by long poll, as before', async () => {
    const org = await organization('stream-none');
    const noEvents: typeof fetch = async (input, init) => {
      if (new URL(String(input)).pathname.includes('/events')) {
        return new Response(JSON.stringify({ code: 'route_not_found', status: 404, title: 'Route not found' }), { status: 404, headers: { 'content-type': 'application/problem+json' } });
      }
      return fetch(input, init);
    };
    const modes = new Set<string>();
    const answer = danaAnswers(org, () => 'ok');
    const result = await runPipelineLocally(org.input('waits'), createConversationActivities({ env: org.env }), {
      streamWaits: { env: org.env, fetch: noEvents },
      onProgress: (event) => {
        if (event.step.wait_mode) modes.add(event.step.wait_mode);
        answer(event);
      },
    });
    expect(result.status).toBe('completed');
    expect([...modes]).toEqual(['poll']);
  }, 120_000);

  it('local: a stream wait that outlasts its timeout fails timed_out, naming the thread its message went to', async () => {
    const org = await organization('stream-timeout');
    const failed: ProgressEvent[] = [];
    const error = await runPipelineLocally(org.input('hurry'), createConversationActivities({ env: org.env }), {
      streamWaits: { env: org.env },
      onProgress: (event) => {
        if (event.step.status === 'failed') failed.push(event);
      },
    }).catch((e: unknown) => e);
    expect((error as { type?: string }).type).toBe('timed_out');
    expect(failed[0]!.step).toMatchObject({ id: 'ask', status: 'failed', error: { code: 'timed_out' } });
    expect(failed[0]!.step.thread_id).toMatch(/^[0-9a-f-]{36}$/);
  }, 60_000);
});
