/**
 * `teamctl tasks list | show | cancel` and `thread show` naming a thread's task (contract §12),
 * against a real acs-server on a free port, in-process through `runCli`. Tasks are asked over
 * REST as the people of the team would; an echo agent's task completes with its echo as an
 * artifact (its turn on the task's thread), a human's task takes artifacts through the REST route
 * as its assignee.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { Task } from '../../api/tasks.ts';
import { AcsClient } from '../../client/acs-client.ts';
import { startServer } from '../../service/index.ts';
import { runTeamctl } from '../support/cli.ts';
import type { CliRun } from '../support/cli.ts';

let server: Awaited<ReturnType<typeof startServer>>;
let apiKey: string;
let client: AcsClient;
/** Team desk: dana and eve (humans), scout (an echo agent); edges dana–scout and dana–eve. */
let desk: { teamId: string; dana: string; eve: string; scout: string; toScout: string; toEve: string };

const teamctl = (args: string[]): Promise<CliRun> => runTeamctl(args, { ACS_BASE_URL: server.url, ACS_API_KEY: apiKey });

beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 50, logger: false });
  const org = await server.provisionOrganization('cli-tasks');
  apiKey = org.api_key;
  client = new AcsClient({ baseUrl: server.url, apiKey });
  await client.putProviderKey(org.org_id, 'echo', 'echo-key');
  const team = await client.createTeam(org.org_id, { team_name: 'desk' });
  const dana = (await client.createHuman(team.team_id, { name: 'dana' })).human_id;
  const eve = (await client.createHuman(team.team_id, { name: 'eve' })).human_id;
  const scout = (await client.createAgent(team.team_id, { name: 'scout', provider: 'echo' })).agent_id;
  const toScout = (await client.createEdge(team.team_id, [dana, scout])).edge_id;
  const toEve = (await client.createEdge(team.team_id, [dana, eve])).edge_id;
  desk = { teamId: team.team_id, dana, eve, scout, toScout, toEve };
});

afterAll(async () => {
  await server?.close();
});

/** Polls `read` until `done` holds (30 s at most), then returns what it read. */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  for (let i = 0; i < 1200; i++) {
    const value = await read();
    if (done(value)) return value;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** dana asks eve (a human: nothing answers for her) for `title` in team desk. */
const danaAsksEve = (title: string): Promise<Task> => client.createTask(desk.toEve, { requester_id: desk.dana, title, parts: [{ text: title }] });

/** dana asks scout (the echo agent) for `text`, and waits until scout's reply completed the task. */
async function danaAsksScout(text: string): Promise<Task> {
  const task = await client.createTask(desk.toScout, { requester_id: desk.dana, parts: [{ text }] });
  return until(() => client.getTask(task.task_id), (t) => t.state === 'completed', `scout's task "${text}" completed`);
}

/** The rows of a `tasks list` table (without its header), each cut into its columns. */
function tableRows(stdout: string): string[][] {
  return stdout
    .trim()
    .split('\n')
    .slice(1)
    .map((line) => line.split(/ {3,}/));
}

describe('teamctl tasks', () => {
  it('tasks list: the tasks of a team are listed newest first, with their state, requester → assignee by name, title and last update', async () => {
    const older = await danaAsksEve('List: check the invoices');
    const newer = await danaAsksEve('List: renew the certificate');
    const result = await teamctl(['tasks', 'list', '--team', 'desk']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.split('\n')[0]).toMatch(/^ID\s+STATE\s+REQUESTER → ASSIGNEE\s+TITLE\s+UPDATED$/);
    const rows = tableRows(result.stdout);
    const ids = rows.map((r) => r[0]);
    expect(ids.indexOf(newer.task_id)).toBeLessThan(ids.indexOf(older.task_id));
    expect(rows.find((r) => r[0] === newer.task_id)).toEqual([newer.task_id, 'submitted', 'dana → eve', 'List: renew the certificate', newer.updated_at]);
  });

  it('tasks list: --state and --assignee narrow the list, and -o json and -o yaml give the tasks with the participants\' names', async () => {
    const mine = await danaAsksEve('Filter: book the room');
    await client.setTaskStatus(mine.task_id, { state: 'working' });
    const done = await danaAsksScout('Filter: say hello');
    const working = await teamctl(['tasks', 'list', '--team', 'desk', '--state', 'working', '--assignee', 'eve', '-o', 'json']);
    expect(working.code, working.stderr).toBe(0);
    const listed = JSON.parse(working.stdout) as { tasks: Array<Task & { requester: string; assignee: string }> };
    expect(listed.tasks.map((t) => [t.task_id, t.state, t.requester, t.assignee])).toEqual([[mine.task_id, 'working', 'dana', 'eve']]);
    const scouts = parse((await teamctl(['tasks', 'list', '--team', 'desk', '--assignee', 'scout', '-o', 'yaml'])).stdout) as { tasks: Task[] };
    expect(scouts.tasks.map((t) => t.task_id)).toContain(done.task_id);
    expect(scouts.tasks.every((t) => t.assignee_id === desk.scout)).toBe(true);
    const none = await teamctl(['tasks', 'list', '--team', 'desk', '--state', 'rejected']);
    expect(none.code).toBe(0);
    expect(none.stdout).toBe('');
    expect(none.stderr).toContain('No tasks found in team desk in state rejected.');
  });

  it('tasks list: an --assignee who is not in the team is name_not_found with a did-you-mean, and a state that is none is refused', async () => {
    const unknown = await teamctl(['tasks', 'list', '--team', 'desk', '--assignee', 'scuot']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('error[name_not_found]: no participant named "scuot" in team desk (did you mean "scout"?)');
    const badState = await teamctl(['tasks', 'list', '--team', 'desk', '--state', 'done']);
    expect(badState.code).toBe(1);
    expect(badState.stderr).toContain("'done' is invalid");
  });

  it('tasks list: --limit reads past the service\'s page of 200, newest first, and says when there may be more', async () => {
    const team = await client.createTeam((await client.getTeam(desk.teamId)).org_id, { team_name: 'busy' });
    const ann = (await client.createHuman(team.team_id, { name: 'ann' })).human_id;
    const bob = (await client.createHuman(team.team_id, { name: 'bob' })).human_id;
    const edge = (await client.createEdge(team.team_id, [ann, bob])).edge_id;
    const created: string[] = [];
    for (let i = 0; i < 203; i++) created.push((await client.createTask(edge, { requester_id: ann, title: `Busy ${i}`, parts: [{ text: `job ${i}` }] })).task_id);
    const newestFirst = created.toReversed();
    const limited = await teamctl(['tasks', 'list', '--team', 'busy', '--limit', '202', '-o', 'json']);
    expect(limited.code, limited.stderr).toBe(0);
    expect((JSON.parse(limited.stdout) as { tasks: Task[] }).tasks.map((t) => t.task_id)).toEqual(newestFirst.slice(0, 202));
    const table = await teamctl(['tasks', 'list', '--team', 'busy', '--limit', '3']);
    expect(tableRows(table.stdout).map((r) => r[0])).toEqual(newestFirst.slice(0, 3));
    expect(table.stderr).toContain('The newest 3 tasks are listed; there may be more: raise --limit.');
    const all = await teamctl(['tasks', 'list', '--team', 'busy', '--limit', '500']);
    expect(tableRows(all.stdout)).toHaveLength(203);
    expect(all.stderr).toBe('');
    // The oldest task's thread: its task is found past the first page of the team's tasks.
    const oldest = await client.getTask(created[0]!);
    const shown = await teamctl(['thread', 'show', oldest.thread_id]);
    expect(shown.stdout.split('\n')[1]).toBe(`Task ${oldest.task_id}: submitted, asked by ann of bob (teamctl tasks show ${oldest.task_id})`);
  }, 120_000);

  it('tasks show: an echo agent\'s completed task shows its state, its reply as status message and artifact, and its thread with the command that reads it', async () => {
    const task = await danaAsksScout('Summarise the report');
    const result = await teamctl(['tasks', 'show', task.task_id]);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(`Task ${task.task_id} "Summarise the report" in team desk: dana → scout`);
    expect(lines[1]).toBe(`State: completed (updated ${task.updated_at}, created ${task.created_at})`);
    expect(lines[2]).toBe(`Status message (scout, ${task.status_message!.sent_at}): echo: Summarise the report`);
    expect(lines.slice(3, 6)).toEqual(['Artifacts (1):', `  1. (unnamed), ${task.artifacts[0]!.created_at}`, '     echo: Summarise the report']);
    expect(lines[6]).toBe(`Thread: ${task.thread_id} (read the conversation: teamctl thread show ${task.thread_id})`);
  });

  it('tasks show: an artifact\'s text parts are printed, its data parts as JSON and its file parts by name and attachment id; -o json and -o yaml give the task with names', async () => {
    const task = await danaAsksEve('Show: the quarterly figures');
    const upload = await fetch(`${server.url}/api/v1/attachments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
      body: JSON.stringify({ filename: 'figures.csv', content_type: 'text/csv', data_base64: Buffer.from('q,total\n3,42\n').toString('base64') }),
    });
    expect(upload.status).toBe(201);
    const attachmentId = ((await upload.json()) as { attachment_id: string }).attachment_id;
    await client.addTaskArtifact(task.task_id, {
      name: 'figures',
      parts: [{ text: 'Q3 is up.\nQ4 is flat.' }, { data: { total: 42, quarter: 3 } }, { file: { name: 'figures.csv', media_type: 'text/csv', attachment_id: attachmentId } }],
    });
    const withArtifact = await client.getTask(task.task_id);
    const result = await teamctl(['tasks', 'show', task.task_id]);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[1]).toMatch(/^State: submitted /);
    expect(lines.slice(2, -1)).toEqual([
      'Artifacts (1):',
      `  1. "figures", ${withArtifact.artifacts[0]!.created_at}`,
      '     Q3 is up.',
      '     Q4 is flat.',
      '     data: {',
      '       "total": 42,',
      '       "quarter": 3',
      '     }',
      `     file: figures.csv (attachment ${attachmentId}, text/csv)`,
    ]);
    const json = JSON.parse((await teamctl(['tasks', 'show', task.task_id, '-o', 'json'])).stdout) as Task & { requester: string; assignee: string; team_name: string };
    expect(json).toEqual({ ...withArtifact, requester: 'dana', assignee: 'eve', team_name: 'desk' });
    const yaml = parse((await teamctl(['tasks', 'show', task.task_id, '-o', 'yaml'])).stdout) as typeof json;
    expect(yaml).toEqual(json);
  });

  it('tasks show: a task id that does not exist is not_found', async () => {
    const result = await teamctl(['tasks', 'show', '6f1f3c1e-0000-4000-8000-000000000000']);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^error\[not_found\]: .*task not found/);
  });

  it('tasks cancel: the requester\'s cancel leaves a task that is not final canceled', async () => {
    const task = await danaAsksEve('Cancel: order more paper');
    const result = await teamctl(['tasks', 'cancel', task.task_id]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.trim()).toBe(`Canceled task ${task.task_id} "Cancel: order more paper".`);
    expect((await client.getTask(task.task_id)).state).toBe('canceled');
  });

  it('tasks cancel: a final task is refused with task_final, exit 1 and a hint, and stays as it was', async () => {
    const task = await danaAsksScout('Cancel me late');
    const result = await teamctl(['tasks', 'cancel', task.task_id]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    const [error, hint] = result.stderr.trim().split('\n');
    expect(error).toMatch(new RegExp(`^error\\[task_final\\]: task ${task.task_id} "Cancel me late" is completed already: a final task changes no more, so it cannot be canceled; nothing changed \\(request [^)]+\\)$`));
    expect(hint).toBe(`hint: teamctl tasks show ${task.task_id} shows its state, status message and artifacts; if the work is still wanted, ask for it in a new task`);
    expect(await client.getTask(task.task_id)).toEqual(task);
  });

  it('thread show: a task\'s thread names its task with its state and participants, in text and JSON; a thread without a task names none', async () => {
    const task = await danaAsksEve('Thread: water the plants');
    const shown = await teamctl(['thread', 'show', task.thread_id]);
    expect(shown.code, shown.stderr).toBe(0);
    const lines = shown.stdout.trimEnd().split('\n');
    expect(lines[0]).toContain(`Thread ${task.thread_id} "Thread: water the plants" in team desk`);
    expect(lines[1]).toBe(`Task ${task.task_id}: submitted, asked by dana of eve (teamctl tasks show ${task.task_id})`);
    expect(lines.slice(2).map((l) => l.replace(/^\S+ /, ''))).toEqual(['dana: Thread: water the plants']);
    const json = JSON.parse((await teamctl(['thread', 'show', task.thread_id, '-o', 'json'])).stdout) as { task: (Task & { requester: string; assignee: string }) | null };
    expect([json.task?.task_id, json.task?.state, json.task?.requester, json.task?.assignee]).toEqual([task.task_id, 'submitted', 'dana', 'eve']);
    const plain = await client.openThread(desk.toEve, { sender_agent_id: desk.dana, content: 'Lunch?' });
    const plainShown = await teamctl(['thread', 'show', plain.thread_id]);
    expect(plainShown.stdout.trimEnd().split('\n').slice(1).map((l) => l.replace(/^\S+ /, ''))).toEqual(['dana: Lunch?']);
    expect((JSON.parse((await teamctl(['thread', 'show', plain.thread_id, '--json'])).stdout) as { task: unknown }).task).toBeNull();
  });
});
