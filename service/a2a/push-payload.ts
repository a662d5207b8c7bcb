/**
 * The body of an A2A push notification (A2A v1.0 §3.1.7 and §4.3, "Push Notification Objects"):
 * a `StreamResponse` holding the Task as it was after the change, as JSON (`{"task": {...}}`,
 * the SDK's `StreamResponse.toJSON`, the form its own sender posts), media type
 * `application/a2a+json`. Made by the webhook worker from a `task.created` or `task.updated`
 * event's data (the service's Task, contract §12), so every attempt of a delivery posts the same
 * bytes. The history is left out (the thread's messages are read with `GetTask`).
 *
 * Loaded by the webhook worker at the first push notification, so a server that never sends one
 * never loads the SDK.
 */
import { StreamResponse } from '@a2a-js/sdk';
import { Task as ServiceTask } from '../../api/tasks.ts';
import { toA2aTask } from './task-mapping.ts';

/** A2A's media type (A2A v1.0 §9.1), the one `@a2a-js/sdk`'s sender posts with. */
export const a2aMediaType = 'application/a2a+json';

/**
 * The notification of the change whose event carried `data` (the service's Task), with file
 * parts' URLs at `publicUrl`. Output: the JSON body and its media type. Errors: throws a Zod
 * error when `data` is not a Task (an event of another shape: a bug).
 */
export function pushNotification(data: unknown, publicUrl: string): { body: string; contentType: string } {
  const task = ServiceTask.parse(data);
  const response: StreamResponse = { payload: { $case: 'task', value: toA2aTask(task, [], publicUrl) } };
  return { body: JSON.stringify(StreamResponse.toJSON(response)), contentType: a2aMediaType };
}
