import { CreateTaskBody, Task, TaskArtifactBody, TaskList, TaskListQuery, TaskStatusBody } from '../../../api/tasks.ts';
import type { RouteDoc } from './route-doc.ts';

const states =
  'States: `submitted`, `working`, `input-required`, and the final `completed`, `failed`, `canceled`, `rejected`; a final task changes no more ' +
  '(409 `task_final`, nothing written).';

/**
 * The OpenAPI description of the task routes (contract §12), keyed as in route-docs.ts, which
 * spreads them into the one table of every route.
 */
export const taskRouteDocs: Readonly<Record<string, RouteDoc>> = {
  'POST /edges/:edge_id/tasks': {
    operationId: 'createTask',
    tag: 'tasks',
    summary: 'Ask one participant of an edge for a task',
    description:
      '`requester_id` is one of the edge\'s two participants (else 403 `not_a_participant`); the other is the assignee. Opens the task\'s thread on the edge ' +
      '(its subject: the title, by default the first line of the first text part) with the requester\'s first message made of the parts: text parts as ' +
      'they are and data parts as ```json blocks, in their order, file parts as its attachments (attachments of the organization, else 422 ' +
      '`unknown_reference`); that message expects the assignee\'s reply. The task starts `submitted`; `task.created` follows the thread\'s events in the log.',
    body: CreateTaskBody,
    success: { status: 201, schema: Task, description: 'the new task (state submitted)' },
    errors: ['not_a_participant', 'unknown_reference'],
  },
  'GET /tasks/:task_id': {
    operationId: 'getTask',
    tag: 'tasks',
    summary: 'A task, with its status message and artifacts',
    description: states,
    success: { status: 200, schema: Task, description: 'the task' },
  },
  'GET /teams/:team_id/tasks': {
    operationId: 'listTeamTasks',
    tag: 'tasks',
    summary: "A team's tasks, newest first",
    description:
      'Of one `state`, of one `assignee_id`, after the task `after` (pass `next_after` to go on; an `after` that names no task of the team is 400 `invalid_cursor`).',
    query: TaskListQuery,
    success: { status: 200, schema: TaskList, description: 'a page of tasks' },
    errors: ['invalid_cursor'],
  },
  'POST /tasks/:task_id/cancel': {
    operationId: 'cancelTask',
    tag: 'tasks',
    summary: 'Cancel a task, as its requester',
    description:
      'The state becomes `canceled` (no status message); `task.updated`. No body. The work on it stops: the assignee\'s turn in progress on the task\'s thread ends as ' +
      '`POST /threads/{thread_id}/stop` ends it (no further model call or tool call; the text so far is posted with `stopped: true` and does not complete the task), ' +
      `and a remote A2A assignee is sent A2A \`CancelTask\` for its own task (best effort). ${states}`,
    success: { status: 200, schema: Task, description: 'the canceled task' },
    errors: ['task_final'],
  },
  'POST /tasks/:task_id/status': {
    operationId: 'setTaskStatus',
    tag: 'tasks',
    summary: "Set a task's state, as its assignee",
    description:
      'Any state but `submitted`, from any state that is not final (`working` and `input-required` back and forth; the same state again replaces the status ' +
      'message). With `message`, it is posted to the task\'s thread as the assignee and kept as `status_message`; without, the status message is cleared. ' +
      `\`task.updated\`. ${states}`,
    body: TaskStatusBody,
    success: { status: 200, schema: Task, description: 'the task after the change' },
    errors: ['task_final'],
  },
  'POST /tasks/:task_id/artifacts': {
    operationId: 'addTaskArtifact',
    tag: 'tasks',
    summary: 'Add an artifact to a task, as its assignee',
    description:
      'After the artifacts it has (at most 100: then 400 `invalid_request`); the state does not change. File parts name attachments of the organization ' +
      `(else 422 \`unknown_reference\`). \`task.updated\`. ${states}`,
    body: TaskArtifactBody,
    success: { status: 201, schema: Task, description: 'the task, the new artifact last' },
    errors: ['task_final', 'unknown_reference'],
  },
};
