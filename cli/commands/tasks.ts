/**
 * `teamctl tasks list | show | cancel`: the tasks of a team (contract §12), participants by name:
 * units of work one participant of an edge asks of the other, each with its conversation in a
 * thread of that edge.
 */
import type { Command } from 'commander';
import { Option } from 'commander';
import { stringify } from 'yaml';
import { TaskStates, type Task, type TaskState } from '../../api/tasks.ts';
import type { AcsClient } from '../../client/acs-client.ts';
import { AcsApiError } from '../../client/errors.ts';
import { participantNames } from '../../client/team-names.ts';
import { ToolkitError } from '../../errors/catalogue.ts';
import { keyringClient, resolveConnection, type ConnectionFlags } from '../context.ts';
import { ExitCodes } from '../errors.ts';
import type { CliIo } from '../io.ts';
import { findTeam, lookUpIn, participantId } from '../team-lookup.ts';
import { renderTable, type Column } from './get-resource.ts';
import { connectionOptions, positiveInt } from './plan-apply.ts';
import type { Runner } from './runner.ts';
import { namedTask, TASK_PAGE, taskLines, type NamedTask } from './task-view.ts';

/** Output formats of `tasks list`: a table (default), or the tasks as JSON or YAML. */
const ListFormats = { table: 'table', json: 'json', yaml: 'yaml' } as const;
/** Output formats of `tasks show`: lines of text (default), or the task as JSON or YAML. */
const ShowFormats = { text: 'text', json: 'json', yaml: 'yaml' } as const;

/** Most tasks `tasks list` prints unless `--limit` says otherwise. */
const DEFAULT_LIMIT = 50;

/** A cell cut to `max` characters with an ellipsis. */
const cut = (value: string, max = 50) => (value.length > max ? `${value.slice(0, max - 1)}…` : value);

/** The columns of `tasks list`. */
const columns: ReadonlyArray<Column<NamedTask>> = [
  { header: 'ID', cell: (t) => t.task_id },
  { header: 'STATE', cell: (t) => t.state },
  { header: 'REQUESTER → ASSIGNEE', cell: (t) => `${t.requester} → ${t.assignee}` },
  { header: 'TITLE', cell: (t) => (t.title ? cut(t.title) : '-') },
  { header: 'UPDATED', cell: (t) => t.updated_at },
];

/** `document` in `format`: JSON indented two spaces, or YAML without line folding. */
function formatted(document: unknown, format: 'json' | 'yaml'): string {
  return format === 'json' ? JSON.stringify(document, null, 2) : stringify(document, { lineWidth: 0 }).trimEnd();
}

/**
 * The newest `limit` tasks of team `teamId` that `filter` selects, newest first, read page by page
 * (at most {@link TASK_PAGE} a request, passing each page's `next_after` as the next `after`) until
 * `limit` or the last task. Output: the tasks and whether more may follow (a full last page).
 */
async function newestTasks(client: AcsClient, teamId: string, filter: { state?: TaskState; assignee_id?: string }, limit: number): Promise<{ tasks: Task[]; more: boolean }> {
  const tasks: Task[] = [];
  let after: string | undefined;
  for (;;) {
    const asked = Math.min(TASK_PAGE, limit - tasks.length);
    const page = await client.listTasks(teamId, { ...filter, after, limit: asked });
    tasks.push(...page.tasks);
    const full = page.tasks.length === asked && page.next_after !== null;
    if (!full || tasks.length >= limit) return { tasks, more: full };
    after = page.next_after!;
  }
}

/**
 * Cancels task `taskId` as its requester. A task that is final already (completed, failed,
 * canceled or rejected: the service's 409 `task_final`) is refused with its id, title and state,
 * and a hint naming `tasks show`. Output: the task, canceled. Errors: `task_final` (nothing
 * changed), `not_found`, the service's others.
 */
async function cancelAsRequester(client: AcsClient, taskId: string): Promise<Task> {
  try {
    return await client.cancelTask(taskId);
  } catch (error) {
    if (!(error instanceof AcsApiError) || error.code !== 'task_final') throw error;
    // The task as it is now, to say what it became; the service's words when it cannot be read.
    const task = await client.getTask(taskId).catch(() => undefined);
    const what = task ? `task ${task.task_id}${task.title ? ` ${JSON.stringify(task.title)}` : ''} is ${task.state} already` : error.message;
    throw new ToolkitError('task_final', `${what}: a final task changes no more, so it cannot be canceled; nothing changed${error.requestId ? ` (request ${error.requestId})` : ''}`, {
      hint: `teamctl tasks show ${taskId} shows its state, status message and artifacts; if the work is still wanted, ask for it in a new task`,
    });
  }
}

/**
 * Registers `tasks list`, `tasks show` and `tasks cancel` (contract §12, organization key):
 * - `list --team T [--org O] [--state S] [--assignee NAME] [--limit N] [-o table|json|yaml]`:
 *   `GET /teams/{team_id}/tasks`, newest first, paged through `after` up to `--limit` (default
 *   50); a table of ID, STATE, REQUESTER → ASSIGNEE (names), TITLE, UPDATED, or `{"tasks": [...]}`.
 * - `show TASK [-o text|json|yaml]`: `GET /tasks/{task_id}` with its state, status message,
 *   artifacts (text parts printed, data parts as JSON, file parts by name and attachment id), its
 *   thread and the `thread show` command that reads it.
 * - `cancel TASK [--json]`: `POST /tasks/{task_id}/cancel`, as the task's requester.
 * Errors: `name_not_found` (team, organization, assignee: with a did-you-mean), `invalid_usage`
 * (a team name in several organizations without `--org`; a bad flag value), `not_found` (task),
 * `task_final` (cancel of a final task; exit 1 with a hint), the service's others.
 */
export function registerTasks(program: Command, io: CliIo, run: Runner): void {
  const tasks = program.command('tasks').description('Tasks of a team: units of work one participant of an edge asks of the other, each with its conversation in a thread: list, show, cancel.');

  connectionOptions(
    tasks
      .command('list')
      .description('List the tasks of a team, newest first: id, state, requester → assignee by name, title, last update.')
      .requiredOption('--team <name>', 'team name')
      .option('--org <name>', 'organization name (when the team name is not unique)')
      .addOption(new Option('--state <state>', 'only tasks in this state').choices(Object.values(TaskStates)))
      .option('--assignee <participant>', 'only tasks asked of this participant (agent or human name)')
      .option('--limit <n>', 'most tasks listed (newest first)', positiveInt, DEFAULT_LIMIT)
      .addOption(new Option('-o, --output <format>', 'output format').choices(Object.values(ListFormats)).default(ListFormats.table)),
  ).action((opts: ConnectionFlags & { team: string; org?: string; state?: TaskState; assignee?: string; limit: number; output: keyof typeof ListFormats }) =>
    run(async () => {
      const client = keyringClient(resolveConnection(opts, io.env), io.env);
      const team = await findTeam(client, opts.team, opts.org);
      const filter: { state?: TaskState; assignee_id?: string } = {};
      if (opts.state) filter.state = opts.state;
      if (opts.assignee !== undefined) {
        const assignee = opts.assignee;
        filter.assignee_id = await lookUpIn(client, team, assignee, () => participantId(team, assignee), { noun: 'participant', teamFrom: 'flag' });
      }
      const { tasks: found, more } = await newestTasks(client, team.team_id, filter, opts.limit);
      const names = participantNames(team);
      const rows = found.map((t) => namedTask(t, (id) => names.get(id) ?? id));
      if (opts.output !== ListFormats.table) {
        io.stdout(formatted({ tasks: rows }, opts.output));
        return ExitCodes.ok;
      }
      const narrowed = [opts.state && `in state ${opts.state}`, opts.assignee !== undefined && `asked of ${opts.assignee}`].filter(Boolean).join(' ');
      if (rows.length === 0) {
        io.stderr(`No tasks found in team ${team.team_name}${narrowed ? ` ${narrowed}` : ''}.`);
        return ExitCodes.ok;
      }
      io.stdout(renderTable(rows, columns));
      if (more) io.stderr(`The newest ${rows.length} tasks are listed; there may be more: raise --limit.`);
      return ExitCodes.ok;
    }),
  );

  connectionOptions(
    tasks
      .command('show')
      .description('Show a task: its participants by name, state, status message, artifacts (text, data as JSON, files by name and attachment id), and its thread with the command that reads the conversation.')
      .argument('<task>', 'task id')
      .addOption(new Option('-o, --output <format>', 'output format').choices(Object.values(ShowFormats)).default(ShowFormats.text)),
  ).action((taskId: string, opts: ConnectionFlags & { output: keyof typeof ShowFormats }) =>
    run(async () => {
      const client = keyringClient(resolveConnection(opts, io.env), io.env);
      const task = await client.getTask(taskId);
      const team = await client.getTeam(task.team_id);
      const names = participantNames(team);
      const nameOf = (id: string) => names.get(id) ?? id;
      if (opts.output === ShowFormats.text) for (const line of taskLines(task, team.team_name, nameOf)) io.stdout(line);
      else io.stdout(formatted({ ...namedTask(task, nameOf), team_name: team.team_name }, opts.output));
      return ExitCodes.ok;
    }),
  );

  connectionOptions(
    tasks
      .command('cancel')
      .description('Cancel a task as its requester: its state becomes canceled, and a reply of its assignee no longer changes it. A task that is completed, failed, canceled or rejected already is refused (task_final).')
      .argument('<task>', 'task id')
      .option('--json', 'print the canceled task as JSON'),
  ).action((taskId: string, opts: ConnectionFlags & { json?: boolean }) =>
    run(async () => {
      const client = keyringClient(resolveConnection(opts, io.env), io.env);
      const task = await cancelAsRequester(client, taskId);
      io.stdout(opts.json ? JSON.stringify(task, null, 2) : `Canceled task ${task.task_id}${task.title ? ` ${JSON.stringify(task.title)}` : ''}.`);
      return ExitCodes.ok;
    }),
  );
}
