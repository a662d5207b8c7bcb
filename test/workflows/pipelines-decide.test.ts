/**
 * Pipelines that decide on the local engine, against a real acs-server whose openai agents answer
 * through a scripted loopback OpenAI-compatible server: a typed reply asked again until it fits,
 * a branch taken and one skipped, a loop of three iterations, a map with one thread per item, a
 * sub-pipeline, a sleep and an entry that fails and is gone on from (the same checks run on
 * Temporal in pipelines-decide.long.test.ts). Also what `teamctl run` prints as entries finish.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConversationActivities } from '../../activities/conversation-activities.ts';
import { runCli } from '../../cli/program.ts';
import { runPipelineLocally } from '../../engine/local-engine.ts';
import type { ProgressEvent } from '../../workflows/pipeline-orchestration.ts';
import { checkReviewRun, cliIo, decideInput, decideOrganization, entry, startDecideServer, teamThreads, type DecideServer } from '../support/decide.ts';

describe('pipelines that decide, local engine', () => {
  let decide: DecideServer;

  beforeAll(async () => {
    decide = await startDecideServer();
  }, 60_000);

  afterAll(async () => {
    await decide?.close();
  });

  it('run: the review pipeline re-asks a typed reply, branches, loops three times, maps with a thread per item, runs a sub-pipeline, sleeps and goes on after a failure', async () => {
    const org = await decideOrganization(decide.server);
    const events: ProgressEvent[] = [];
    const result = await runPipelineLocally(
      { ...decideInput(decide.server.url, org, 'review', { doc: 'D-1' }), runKey: `local/${org.name}/review/test` },
      createConversationActivities({ env: org.env }),
      { onProgress: (event) => void events.push(event) },
    );
    await checkReviewRun(org, result, 'D-1');
    // Every message whose step awaits a reply expects one, re-asks included; the note does not.
    const classify = await org.client.getThread(entry(result.steps, 'classify').thread_id!, { limit: 50 });
    expect(classify.messages.filter((m) => m.sender_id === org.ids['dana']).map((m) => [m.content.split('\n')[0], m.expects_reply])).toEqual([
      ['Classify: D-1', true],
      ['Your reply does not fit what this step expects:', true],
      ['Your reply does not fit what this step expects:', true],
      ['Not urgent: bug noted.', false],
    ]);
    // The sub-pipeline's entries are reported under it, and its run id is under the parent's.
    expect(entry(result.steps, 'notify').run_id).toBe(`local/${org.name}/review/test/notify`);
    expect(events.some((e) => e.location[0] && 'run' in e.location[0] && e.location[0].run === 'notify' && e.step.id === 'tell' && e.step.status === 'completed')).toBe(true);
  }, 120_000);

  it('teamctl run: prints each entry as it finishes, with where it is in loops, maps and sub-pipelines, then the output', async () => {
    const org = await decideOrganization(decide.server);
    const out: string[] = [];
    const code = await runCli(['run', 'review', '-f', org.file, '--input', 'doc=D-2'], cliIo(decide.server.url, org.env, out));
    expect(code, out.join('\n')).toBe(0);
    const lines = out.map((l) => l.replace(/thread [0-9a-f-]{36}/g, 'thread T').replace(/as local\/\S+/g, 'as RUN'));
    // The run id first (on stderr), as on Temporal; then the entries.
    const runId = /^Started run (local\/\S+) in this process/.exec(lines[0]!)![1]!;
    expect(runId).toMatch(new RegExp(`^local/${org.name}/review/\\d{8}T\\d{6}Z-[0-9a-f]{12}$`));
    expect(lines[1]).toBe('✓ classify  thread T  reply: Sorry: ```json {"category": "bug", "urgent": false} ```  asked again 2×');
    expect(lines).toContain('↷ page (skipped)');
    expect(lines).toContain('rounds › iteration 1 › ✓ verdict  thread T  reply: revise');
    expect(lines).toContain('✓ rounds  loop, 3 iterations');
    expect(lines).toContain('per-item › item 1 › ✓ handle  thread T  reply: reply to: Do fix for D-2');
    expect(lines).toContain('notify › ✓ tell  thread T  reply: reply to: Announce: approve');
    expect(lines).toContain('✓ notify  run announce as RUN  output: reply to: Announce: approve');
    expect(lines.find((l) => l.startsWith('✗ ping'))).toMatch(/^✗ ping \(failed\)  thread T  timed_out: no message from /);
    expect(lines.at(-1)).toBe('output: approve after 3 rounds; ping failed (timed_out)');
    // Finished entries print once each, in the order they finished: the loop after its iterations.
    expect(lines.indexOf('✓ rounds  loop, 3 iterations')).toBeGreaterThan(lines.indexOf('rounds › iteration 2 › ✓ verdict  thread T  reply: approve'));

  }, 120_000);

  it('a loop and a map whose steps wait for a person: each round and each item is answered in its own place, nothing is sent twice', async () => {
    const org = await decideOrganization(decide.server);
    const acts = createConversationActivities({ env: org.env });
    const answered = new Set<string>();
    // Answers as ext each question of dana's that has no answer yet: "more" twice, then "done"; "ok" to the items.
    const answering = setInterval(() => {
      void (async () => {
        for (const thread of await teamThreads(org)) {
          if (!thread.between.includes('ext')) continue;
          const last = thread.messages.at(-1);
          if (!last || last[0] !== 'dana' || answered.has(`${thread.threadId}${thread.messages.length}`)) continue;
          answered.add(`${thread.threadId}${thread.messages.length}`);
          const round = /^Round (\d+)/.exec(last[1]);
          const content = round ? (Number(round[1]) < 2 ? 'more' : 'done') : 'ok';
          await org.client.appendMessage(thread.threadId, { sender_agent_id: org.ids['ext']!, content });
        }
      })().catch(() => undefined);
    }, 200);
    try {
      const loop = await runPipelineLocally({ ...decideInput(decide.server.url, org, 'rounds-for-a-person'), runKey: `local/${org.name}/rounds/test` }, acts);
      expect(loop.output).toBe('3');
      const map = await runPipelineLocally({ ...decideInput(decide.server.url, org, 'items-for-a-person', { count: 3 }), runKey: `local/${org.name}/items/test` }, acts);
      expect(entry(map.steps, 'each').items?.map((i) => [i.item, i.status, i.steps[0]!.reply])).toEqual([
        [1, 'completed', 'ok'],
        [2, 'completed', 'ok'],
        [3, 'completed', 'ok'],
      ]);
    } finally {
      clearInterval(answering);
    }
    const threads = (await teamThreads(org)).filter((t) => t.between.includes('ext'));
    // One thread for the loop's step across its three rounds, one per item.
    expect(threads.map((t) => t.messages.filter(([who]) => who === 'dana').map(([, text]) => text)).sort()).toEqual(
      [['Item 1?'], ['Item 2?'], ['Item 3?'], ['Round 0: done or more?', 'Round 1: done or more?', 'Round 2: done or more?']],
    );
  }, 120_000);
});
