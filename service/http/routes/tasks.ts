import type { FastifyInstance } from 'fastify';
import { CreateTaskBody, TaskArtifactBody, TaskListQuery, TaskStatusBody } from '../../../api/tasks.ts';
import { addTaskArtifact, cancelTask, createTask, getTask, listTeamTasks, setTaskStatus } from '../../domain/tasks.ts';
import { callerOf } from '../auth.ts';
import { parseInput } from '../validate.ts';
import type { Params, RouteContext } from './context.ts';

/**
 * Task routes (contract §12), with an organization key: `POST /edges/{edge_id}/tasks` → 201 Task
 * (opens its thread with the parts as the requester's first message); `GET /tasks/{task_id}` →
 * 200 Task; `GET /teams/{team_id}/tasks?state&assignee_id&after&limit` → 200 `{tasks, next_after}`
 * newest first; `POST /tasks/{task_id}/cancel` → 200 Task (the requester's); `POST
 * /tasks/{task_id}/status` `{state, message?}` → 200 Task and `POST /tasks/{task_id}/artifacts`
 * `{name?, parts}` → 201 Task (the assignee's). POSTs take an Idempotency-Key as every POST does.
 * Errors: `not_found`, `not_a_participant`, `unknown_reference`, `invalid_request`,
 * `invalid_cursor`, `task_final` (409: a final task changes no more).
 */
export function taskRoutes(app: FastifyInstance, { deps }: RouteContext): void {
  app.post<Params<'edge_id'>>('/edges/:edge_id/tasks', async (request, reply) => {
    const body = parseInput(CreateTaskBody, request.body);
    return reply.code(201).send(await createTask(deps, callerOf(request), request.params.edge_id, body));
  });
  app.get<Params<'task_id'>>('/tasks/:task_id', async (request) => getTask(deps, callerOf(request), request.params.task_id));
  app.get<Params<'team_id'>>('/teams/:team_id/tasks', async (request) => {
    const query = parseInput(TaskListQuery, request.query);
    return listTeamTasks(deps, callerOf(request), request.params.team_id, query);
  });
  // No body: the key acts as the task's requester.
  app.post<Params<'task_id'>>('/tasks/:task_id/cancel', async (request) => cancelTask(deps, callerOf(request), request.params.task_id));
  app.post<Params<'task_id'>>('/tasks/:task_id/status', async (request) => {
    const body = parseInput(TaskStatusBody, request.body);
    return setTaskStatus(deps, callerOf(request), request.params.task_id, body);
  });
  app.post<Params<'task_id'>>('/tasks/:task_id/artifacts', async (request, reply) => {
    const body = parseInput(TaskArtifactBody, request.body);
    return reply.code(201).send(await addTaskArtifact(deps, callerOf(request), request.params.task_id, body));
  });
}
