/**
 * The task tools (contract §12): what an agent may do with the tasks it asked for or is asked to
 * do — list them, read one, change its state, add an artifact — each one implementation over
 * `domain/tasks.ts`'s participant-scoped operations, so a task the agent is on neither end of is
 * `not_found`, worded as an id that does not exist. The MCP endpoint offers them to external agents
 * (mcp/tools.ts) and turns to provider agents with the team tools (tools/toolbox.ts); a provider
 * agent's turn also moves its task by itself (domain/task-turns.ts). Arguments and results are the
 * Zod schemas of `api/mcp-tools.ts`.
 */
import type { z } from 'zod';
import { AddArtifactArgs, GetTaskArgs, ListTasksArgs, ListTasksResult, McpToolNames, TaskResult, UpdateTaskArgs } from '../../api/mcp-tools.ts';
import { ServiceError } from '../../errors/catalogue.ts';
import { addTaskArtifactAsParticipant, cancelTaskAsParticipant, getTaskAsParticipant, listTasksAsParticipant, setTaskStatusAsParticipant } from '../domain/tasks.ts';
import type { TeamTool, TeamToolContext } from './team-tools.ts';

// Where a tool's description says "your", it means the agent acting.
const onlyYours = 'A task you neither asked for nor are asked to do is refused, worded as for an id that does not exist.';
const finalRefused = 'A final task (completed, failed, canceled, rejected) changes no more: task_final, and nothing is written.';

/** Defines a tool with its argument type checked against its schema. */
function define<I extends z.ZodObject, O extends z.ZodObject>(tool: TeamTool<I, O>): TeamTool {
  return tool as unknown as TeamTool;
}

const participantOf = ({ agent }: TeamToolContext) => ({ agentId: agent.agentId, orgId: agent.orgId });

/**
 * `update_task`: as the assignee, any state but submitted (with `message` posted to the task's
 * thread and kept as its status message); as the requester, only `canceled`. Errors: the domain's
 * (`not_found`, `task_final`), `forbidden` (a requester's other state).
 */
async function updateTask(context: TeamToolContext, args: z.output<typeof UpdateTaskArgs>): Promise<Record<string, unknown>> {
  const participant = participantOf(context);
  const task = await getTaskAsParticipant(context.deps, participant, args.task_id);
  if (task.requester_id === participant.agentId) {
    if (args.state !== 'canceled') throw new ServiceError('forbidden', 'you asked for this task: you may only cancel it (state canceled); its assignee sets the other states');
    return cancelTaskAsParticipant(context.deps, participant, args.task_id, { message: args.message });
  }
  return setTaskStatusAsParticipant(context.deps, participant, args.task_id, { state: args.state, message: args.message });
}

/** The four task tools, in the contract's order (§12). */
export const taskTools: readonly TeamTool[] = [
  define({
    name: McpToolNames.list_tasks,
    title: 'List my tasks',
    description:
      'Tasks you asked for (role requester) or are asked to do (role assignee), newest first: each with its state, status message and artifacts. ' +
      'Filter by state, role or peer_id (the other participant); pass next_after as after to read on.',
    input: ListTasksArgs,
    output: ListTasksResult,
    annotations: { readOnlyHint: true, openWorldHint: false },
    run: (context, args) => listTasksAsParticipant(context.deps, participantOf(context), args),
  }),
  define({
    name: McpToolNames.get_task,
    title: 'Get a task',
    description: `One of your tasks: its state, status message, artifacts, and thread_id (read_thread reads its conversation). ${onlyYours}`,
    input: GetTaskArgs,
    output: TaskResult,
    annotations: { readOnlyHint: true, openWorldHint: false },
    run: (context, args) => getTaskAsParticipant(context.deps, participantOf(context), args.task_id),
  }),
  define({
    name: McpToolNames.update_task,
    title: 'Update a task',
    description:
      'As the task\'s assignee: set its state (working, input-required, completed, failed, canceled, rejected), with an optional message ' +
      'posted to the task\'s thread as you and kept as its status message (a question for input-required, a reason for failed). ' +
      `As its requester: only cancel it (state canceled). ${finalRefused} ${onlyYours}`,
    input: UpdateTaskArgs,
    output: TaskResult,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    run: (context, args) => updateTask(context, args),
  }),
  define({
    name: McpToolNames.add_artifact,
    title: 'Add an artifact to a task',
    description:
      'As the task\'s assignee: add what you produced, as parts (text, data: any JSON, or file: an attachment of the organization), with an optional name; ' +
      `the state does not change (complete it with update_task). ${finalRefused} ${onlyYours}`,
    input: AddArtifactArgs,
    output: TaskResult,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    run: (context, args) => addTaskArtifactAsParticipant(context.deps, participantOf(context), args.task_id, { name: args.name, parts: args.parts }),
  }),
];
