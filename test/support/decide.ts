/**
 * What the tests of pipelines that decide share (test/workflows/pipelines-decide*.test.ts): an
 * acs-server whose openai agents answer through a scripted loopback OpenAI-compatible stub, an
 * organization per test with test/workflows/fixtures/decide.yaml applied, the team's threads read
 * back by participant names, and the checks of the `review` pipeline's run, the same on both
 * engines.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { AcsClient } from '../../client/acs-client.ts';
import { runCli } from '../../cli/program.ts';
import { loadDefinitionFile } from '../../definitions/load.ts';
import type { Definition } from '../../definitions/schema.ts';
import { startServer } from '../../service/index.ts';
import type { PipelineRunInput, StepProgress } from '../../workflows/pipeline-orchestration.ts';
import { scriptedCompletions, startOpenAiStub, type OpenAiStub } from './openai-stub.ts';

const fixture = new URL('../workflows/fixtures/decide.yaml', import.meta.url);

/** The stub's key for the organization's `openai` provider key (made up, put together at run time). */
export const STUB_OPENAI_KEY = ['sk', 'stub', 'decide', '0001'].join('-');

/**
 * The scripted agents: the triager answers a classification with prose first (not JSON), then
 * JSON of the wrong shape, then a ```json block that fits; the reviewer says revise twice, then
 * approve; everything else gets the stub's `reply to: <message>`.
 */
export const SCRIPT = [
  { model: 'triager-model', match: /^Classify:/, replies: ['It looks like a bug to me.'] },
  { model: 'triager-model', match: /^Your reply does not fit/, replies: ['{"category": "crash", "urgent": "no"}', 'Sorry:\n```json\n{"category": "bug", "urgent": false}\n```'] },
  { model: 'reviewer-model', match: /^Approve or revise\?/, replies: ['revise', 'revise', 'approve'] },
];

/** A running acs-server with its stub. */
export interface DecideServer {
  server: Awaited<ReturnType<typeof startServer>>;
  stub: OpenAiStub;
  close(): Promise<void>;
}

/** Starts the stub and an in-memory acs-server that reaches it (agent loop tick 100 ms, no rate limit). */
export async function startDecideServer(): Promise<DecideServer> {
  const stub = await startOpenAiStub(scriptedCompletions(SCRIPT));
  const server = await startServer({ inMemory: true, port: 0, tickMs: 100, logger: false, rateLimit: false, env: { OPENAI_BASE_URL: `${stub.origin}/v1` } });
  return {
    server,
    stub,
    async close() {
      await server.close();
      await stub.close();
    },
  };
}

/** An organization of a test with the fixture applied. */
export interface DecideOrg {
  name: string;
  file: string;
  apiKey: string;
  client: AcsClient;
  /** The environment of the CLI and of workers: the organization key and the stub's key. */
  env: Record<string, string>;
  definition: Definition;
  /** Participant ids by name. */
  ids: Record<string, string>;
}

/** Provisions an organization and applies the fixture to it with `teamctl apply`. */
export async function decideOrganization(server: DecideServer['server']): Promise<DecideOrg> {
  const name = `decide-${randomUUID()}`;
  const { api_key: apiKey } = await server.provisionOrganization(name);
  const text = (await readFile(fixture, 'utf8')).replace('name: decide', `name: ${name}`);
  const file = join(await mkdtemp(join(tmpdir(), 'teamctl-decide-')), 'decide.yaml');
  await writeFile(file, text);
  const env = { ACS_API_KEY: apiKey, STUB_OPENAI_KEY };
  const out: string[] = [];
  const code = await runCli(['apply', '-f', file], cliIo(server.url, env, out));
  expect(code, out.join('\n')).toBe(0);
  const client = new AcsClient({ baseUrl: server.url, apiKey });
  const org = (await client.listOrganizations()).find((o) => o.org_name === name)!;
  const team = (await client.listTeams(org.org_id)).find((t) => t.team_name === 'desk')!;
  const graph = await client.getTeam(team.team_id);
  const ids = Object.fromEntries([...graph.agents.map((a) => [a.name, a.agent_id]), ...graph.humans.map((h) => [h.name, h.human_id])]);
  return { name, file, apiKey, client, env, definition: await loadDefinitionFile(file), ids };
}

/** The CLI's I/O with output collected in `out`. */
export function cliIo(baseUrl: string, env: Record<string, string>, out: string[]) {
  return { env: { ...process.env, ...env, ACS_BASE_URL: baseUrl }, isTTY: false, stdout: (t: string) => void out.push(t), stderr: (t: string) => void out.push(t) };
}

/** A run input of a pipeline of the fixture (with the sub-pipelines it runs). */
export function decideInput(baseUrl: string, org: DecideOrg, pipeline: string, inputs: PipelineRunInput['inputs'] = {}): PipelineRunInput {
  const announce = org.definition.pipelines.find((p) => p.name === 'announce')!;
  return {
    connection: { baseUrl, apiKeyEnv: 'ACS_API_KEY' },
    organization: org.name,
    pipeline: org.definition.pipelines.find((p) => p.name === pipeline)!,
    ...(pipeline === 'review' ? { pipelines: { announce } } : {}),
    inputs,
  };
}

/** One thread of the team with its messages as `[sender name, content]`, oldest first. */
export interface NamedThread {
  threadId: string;
  between: [string, string];
  messages: Array<[string, string]>;
}

/** Every thread of the team, each with its messages by sender name. */
export async function teamThreads(org: DecideOrg): Promise<NamedThread[]> {
  const names = Object.fromEntries(Object.entries(org.ids).map(([name, id]) => [id, name]));
  const orgId = (await org.client.listOrganizations()).find((o) => o.org_name === org.name)!.org_id;
  const team = (await org.client.listTeams(orgId)).find((t) => t.team_name === 'desk')!;
  const graph = await org.client.getTeam(team.team_id);
  const out: NamedThread[] = [];
  for (const edge of graph.edges) {
    for (const thread of await org.client.listThreads(edge.edge_id)) {
      const page = await org.client.getThread(thread.thread_id, { limit: 200 });
      out.push({ threadId: thread.thread_id, between: edge.participants.map((p) => names[p]!) as [string, string], messages: page.messages.map((m) => [names[m.sender_id]!, m.content]) });
    }
  }
  return out;
}

/** Waits until `check` holds (polling every 100 ms), or throws after `ms`. */
export async function eventually<T>(check: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('eventually: the condition did not hold in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The entry of a tree with id `id` (top level). */
export function entry(steps: readonly StepProgress[], id: string): StepProgress {
  const found = steps.find((s) => s.id === id);
  if (!found) throw new Error(`no entry ${id} in ${steps.map((s) => s.id).join(', ')}`);
  return found;
}

/**
 * Checks a completed `review` run against the service, the same on both engines: the typed reply
 * asked twice again in its thread (quoting the validator), the branch taken and the one skipped,
 * three iterations in one thread per step of the loop, one thread per map item, the
 * sub-pipeline's thread and output, the failed `ping` gone on from, and no message of dana's sent
 * twice.
 */
export async function checkReviewRun(org: DecideOrg, result: { output: string | null; steps: StepProgress[] }, doc: string): Promise<void> {
  const { steps } = result;
  expect(result.output).toBe('approve after 3 rounds; ping failed (timed_out)');
  expect(steps.map((s) => [s.id, s.kind, s.status])).toEqual([
    ['classify', 'step', 'completed'],
    ['page', 'step', 'skipped'],
    ['note', 'step', 'completed'],
    ['rounds', 'loop', 'completed'],
    ['per-item', 'map', 'completed'],
    ['notify', 'run', 'completed'],
    ['cool-off', 'sleep', 'completed'],
    ['ping', 'step', 'failed'],
  ]);

  // The typed reply: two misfits, each answered in the same thread with what was wrong.
  const classify = entry(steps, 'classify');
  expect(classify.value).toEqual({ category: 'bug', urgent: false });
  expect(classify.misfits?.map((m) => m.reply)).toEqual(['It looks like a bug to me.', '{"category": "crash", "urgent": "no"}']);
  expect(classify.misfits?.[1]?.problems).toEqual(['/category must be one of bug, question, feature', '/urgent must be boolean']);
  const threads = await teamThreads(org);
  const thread = (id: string | null) => threads.find((t) => t.threadId === id)!;
  const classified = thread(classify.thread_id).messages;
  const fromDana = classified.filter(([who]) => who === 'dana').map(([, text]) => text);
  expect(fromDana).toHaveLength(4);
  expect(fromDana[0]).toBe(`Classify: ${doc}`);
  expect(fromDana[1]).toMatch(/^Your reply does not fit what this step expects:\n- the reply is not JSON \(/);
  expect(fromDana[2]).toBe(
    [
      'Your reply does not fit what this step expects:',
      '- /category must be one of bug, question, feature',
      '- /urgent must be boolean',
      'Please answer again (reply 3 of 3) with JSON (alone, or in a ```json block) that fits this JSON Schema:',
      '{"type":"object","required":["category","urgent"],"properties":{"category":{"enum":["bug","question","feature"]},"urgent":{"type":"boolean"}}}',
    ].join('\n'),
  );
  // The branch taken writes into the classify thread; the one skipped opened no thread.
  expect(fromDana[3]).toBe('Not urgent: bug noted.');
  expect(classified.slice(0, 6).map(([who]) => who)).toEqual(['dana', 'triager', 'dana', 'triager', 'dana', 'triager']);
  expect(threads.filter((t) => t.messages.some(([, text]) => text.startsWith('Urgent')))).toEqual([]);

  // The loop: three iterations, one thread per step across them.
  const rounds = entry(steps, 'rounds');
  expect(rounds.iterations?.map((it) => it.steps.map((s) => [s.id, s.status, s.value]))).toEqual([
    [['draft', 'completed', `reply to: Draft (round 0): ${doc}`], ['verdict', 'completed', 'revise']],
    [['draft', 'completed', `reply to: Draft (round 1): ${doc}`], ['verdict', 'completed', 'revise']],
    [['draft', 'completed', `reply to: Draft (round 2): ${doc}`], ['verdict', 'completed', 'approve']],
  ]);
  const draftThreads = new Set(rounds.iterations!.map((it) => entry(it.steps, 'draft').thread_id));
  const verdictThreads = new Set(rounds.iterations!.map((it) => entry(it.steps, 'verdict').thread_id));
  expect(draftThreads.size).toBe(1);
  expect(verdictThreads.size).toBe(1);
  expect(thread([...draftThreads][0]!).messages.filter(([who]) => who === 'dana').map(([, t]) => t)).toEqual([0, 1, 2].map((i) => `Draft (round ${i}): ${doc}`));
  const verdicts = thread([...verdictThreads][0]!).messages;
  expect(verdicts.filter(([who]) => who === 'reviewer').map(([, t]) => t)).toEqual(['revise', 'revise', 'approve']);
  expect(verdicts.filter(([who]) => who === 'dana')).toHaveLength(3);

  // The map: one thread per item.
  const map = entry(steps, 'per-item');
  expect(map.items?.map((it) => [it.item, it.status])).toEqual([
    ['repro', 'completed'],
    ['fix', 'completed'],
  ]);
  const itemThreads = map.items!.map((it) => entry(it.steps, 'handle').thread_id);
  expect(new Set(itemThreads).size).toBe(2);
  expect(itemThreads.map((id) => thread(id).messages.filter(([who]) => who === 'dana').map(([, t]) => t))).toEqual([[`Do repro for ${doc}`], [`Do fix for ${doc}`]]);
  expect(threads.filter((t) => t.between.includes('triager')).length).toBe(3);

  // The sub-pipeline: its own thread; its output is the entry's value.
  const notify = entry(steps, 'notify');
  expect(notify.value).toBe('reply to: Announce: approve');
  expect(threads.filter((t) => t.messages.some(([who, text]) => who === 'dana' && text === 'Announce: approve'))).toHaveLength(1);

  // onError: continue: the failed entry says why, and the run went on.
  const ping = entry(steps, 'ping');
  expect(ping.error?.code).toBe('timed_out');
  expect(threads.filter((t) => t.between.includes('oncall')).map((t) => t.messages)).toEqual([[['dana', 'Anyone there?']]]);

  // Nothing of dana's was sent twice: 4 + 3 + 3 + 2 + 1 + 1 messages.
  const danas = threads.flatMap((t) => t.messages.filter(([who]) => who === 'dana').map(([, text]) => `${t.threadId}\u0000${text}`));
  expect(new Set(danas).size).toBe(danas.length);
  expect(danas).toHaveLength(14);
}
