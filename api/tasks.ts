/**
 * Zod schemas of tasks: a unit of work asked of one participant of an edge (the assignee) by the
 * other (the requester), whose conversation is a thread on that edge. Its shape follows the Task of
 * the Agent2Agent protocol (A2A) v1.0, so that A2A clients and the service's own routes see one
 * object: its states, its status message, its artifacts made of parts.
 */
import { z } from 'zod';
import { Message } from './schemas.ts';
import { Id, Timestamp } from './primitives.ts';

/** A task's states (A2A v1.0's, in its spelling); the last four are final: a final task changes no more. */
export const TaskStates = {
  submitted: 'submitted',
  working: 'working',
  'input-required': 'input-required',
  completed: 'completed',
  failed: 'failed',
  canceled: 'canceled',
  rejected: 'rejected',
} as const;
export const TaskState = z.enum(TaskStates);
export type TaskState = z.infer<typeof TaskState>;

/** The final states. */
export const finalTaskStates: readonly TaskState[] = ['completed', 'failed', 'canceled', 'rejected'];

/** The most parts one message or artifact of a task may carry, and the most artifacts of one task. */
export const maxTaskParts = 20;
export const maxTaskArtifacts = 100;

/** A part of a task's message or artifact, as A2A's: text, structured data, or a file (an attachment of the organization). */
export const TaskPart = z
  .union([
    z.strictObject({ text: z.string().min(1).max(32_768) }),
    z.strictObject({ data: z.unknown().refine((v) => v !== undefined, 'must be a JSON value') }),
    z.strictObject({
      file: z.strictObject({
        name: z.string().trim().min(1).max(255).optional(),
        media_type: z.string().min(1).max(255).optional(),
        attachment_id: Id.meta({ description: 'An attachment of the task\'s organization (POST /attachments).' }),
      }),
    }),
  ])
  .meta({ id: 'TaskPart', description: 'A text, structured data (any JSON), or a file (an attachment of the organization).' });
export type TaskPart = z.infer<typeof TaskPart>;

/** Parts of one message or artifact: 1–20. */
export const TaskParts = z.array(TaskPart).min(1).max(maxTaskParts);

/** An artifact of a task: what its assignee produced. */
export const TaskArtifact = z
  .object({
    artifact_id: Id,
    name: z.string().nullable(),
    parts: z.array(TaskPart),
    created_at: Timestamp,
  })
  .meta({ id: 'TaskArtifact' });
export type TaskArtifact = z.infer<typeof TaskArtifact>;

/** A task as the service returns it. */
export const Task = z
  .object({
    task_id: Id,
    org_id: Id,
    team_id: Id,
    edge_id: Id,
    thread_id: Id.meta({ description: 'The thread of the task\'s conversation, on its edge; its first message holds the parts the task was asked with.' }),
    requester_id: Id,
    assignee_id: Id,
    title: z.string(),
    state: TaskState,
    status_message: Message.nullable().meta({ description: 'The message of the task\'s latest change of state, when it came with one (a question of input-required, a reason of failed).' }),
    artifacts: z.array(TaskArtifact),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'Task' });
export type Task = z.infer<typeof Task>;

/** `POST /edges/{edge_id}/tasks`: who asks (one of the edge's two participants), a title, and what is asked. */
export const CreateTaskBody = z
  .strictObject({
    requester_id: Id.meta({ description: 'The participant asking (one of the edge\'s two); the other is the assignee.' }),
    title: z.string().trim().max(200).optional(),
    parts: TaskParts,
  })
  .meta({ id: 'CreateTaskBody' });

/** `POST /tasks/{task_id}/status`: the assignee's change of state, with a message when there is one to say. */
export const TaskStatusBody = z
  .strictObject({
    state: TaskState.exclude(['submitted']).meta({ description: 'working, input-required, completed, failed, canceled or rejected.' }),
    message: z.string().trim().min(1).max(32_768).optional().meta({ description: 'Posted to the task\'s thread as the assignee, and kept as `status_message`.' }),
  })
  .meta({ id: 'TaskStatusBody' });

/** `POST /tasks/{task_id}/artifacts`: an artifact of the assignee's. */
export const TaskArtifactBody = z.strictObject({ name: z.string().trim().min(1).max(200).optional(), parts: TaskParts }).meta({ id: 'TaskArtifactBody' });

/** `GET /teams/{team_id}/tasks`: filters and paging (`after`: a task id of the team; newest first). */
export const TaskListQuery = z.strictObject({
  state: TaskState.optional(),
  assignee_id: Id.optional(),
  after: Id.optional().meta({ description: 'Start after this task (its id); default: from the newest.' }),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});

/** The answer of `GET /teams/{team_id}/tasks`. */
export const TaskList = z
  .object({
    tasks: z.array(Task),
    next_after: Id.nullable().meta({ description: 'The last task of this page (pass it as `after`), or null when the page is empty.' }),
  })
  .meta({ id: 'TaskList' });
export type TaskList = z.infer<typeof TaskList>;
