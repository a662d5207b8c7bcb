/**
 * How `teamctl` reads and shows tasks (contract §12): a task with its participants by name, the
 * lines of `tasks show` (state, status message, artifacts part by part, its thread and the command
 * that reads it), and the task of a thread for `thread show`.
 */
import type { Task, TaskArtifact, TaskList, TaskPart } from '../../api/tasks.ts';
import type { Thread } from '../../api/schemas.ts';
import type { AcsClient } from '../../client/acs-client.ts';
import { AcsApiError } from '../../client/errors.ts';

/** A task with its requester's and assignee's names (`-o json|yaml` of `tasks list` and `tasks show`). */
export type NamedTask = Task & { requester: string; assignee: string };

/** `task` with its two participants' names, by `nameOf` (an id it does not know stays an id). */
export function namedTask(task: Task, nameOf: (id: string) => string): NamedTask {
  return { ...task, requester: nameOf(task.requester_id), assignee: nameOf(task.assignee_id) };
}

/** The command that prints a thread's conversation: `teamctl thread show THREAD`. */
export function threadShowCommand(threadId: string): string {
  return `teamctl thread show ${threadId}`;
}

/** `text` with every line but the first indented by `indent` (a multi-line value under its label). */
function indentRest(text: string, indent: string): string {
  return text.split('\n').join(`\n${indent}`);
}

/**
 * One part of a message or artifact as lines under `indent`: a text part as it is (each of its
 * lines indented), a data part as `data: ` and its JSON (indented two spaces a level), a file part
 * as `file: NAME (attachment ID, MEDIA TYPE)`.
 */
export function partLines(part: TaskPart, indent: string): string[] {
  if ('text' in part) return part.text.split('\n').map((line) => `${indent}${line}`);
  if ('data' in part) return [`${indent}data: ${indentRest(JSON.stringify(part.data, null, 2), indent)}`];
  const { name, media_type: mediaType, attachment_id: attachmentId } = part.file;
  return [`${indent}file: ${name ?? '(unnamed)'} (attachment ${attachmentId}${mediaType ? `, ${mediaType}` : ''})`];
}

/** An artifact's heading and its parts: `  1. "report", 2026-…` (`(unnamed)` without a name), then each part under it. */
function artifactLines(artifact: TaskArtifact, index: number): string[] {
  const name = artifact.name === null ? '(unnamed)' : JSON.stringify(artifact.name);
  return [`  ${index + 1}. ${name}, ${artifact.created_at}`, ...artifact.parts.flatMap((part) => partLines(part, '     '))];
}

/**
 * The lines of `tasks show` in text: the task's id, title and team, requester → assignee, its
 * state and times, its status message (sender and content) when it has one, its artifacts (each
 * part printed: see {@link partLines}), and its thread with the command that reads the
 * conversation. Input: the task, its team's name and a name for each participant id.
 */
export function taskLines(task: Task, teamName: string, nameOf: (id: string) => string): string[] {
  const lines = [
    `Task ${task.task_id}${task.title ? ` ${JSON.stringify(task.title)}` : ''} in team ${teamName}: ${nameOf(task.requester_id)} → ${nameOf(task.assignee_id)}`,
    `State: ${task.state} (updated ${task.updated_at}, created ${task.created_at})`,
  ];
  const status = task.status_message;
  if (status) lines.push(`Status message (${nameOf(status.sender_id)}, ${status.sent_at}): ${indentRest(status.content, '  ')}`);
  if (task.artifacts.length === 0) lines.push('Artifacts: none');
  else lines.push(`Artifacts (${task.artifacts.length}):`, ...task.artifacts.flatMap(artifactLines));
  lines.push(`Thread: ${task.thread_id} (read the conversation: ${threadShowCommand(task.thread_id)})`);
  return lines;
}

/** The most tasks of one page the service gives (contract §12 `GET /teams/{team_id}/tasks`: `limit` 1–200). */
export const TASK_PAGE = 200;

/**
 * The task whose conversation `thread` is, or undefined: a thread has at most one task, and
 * `GET /teams/{team_id}/tasks` (newest first) is read page by page, keeping the task whose
 * `thread_id` it is. A task is created with its thread or after it, so once a page reaches tasks
 * created before the thread there is none further: one request in every case but an old thread
 * in a team with more than {@link TASK_PAGE} tasks created since. A service without the tasks
 * routes (`route_not_found`: older than contract §12) has none. Errors: the service's others.
 */
export async function taskOfThread(client: AcsClient, thread: Pick<Thread, 'thread_id' | 'team_id' | 'created_at'>): Promise<Task | undefined> {
  let after: string | undefined;
  for (;;) {
    let page: TaskList;
    try {
      page = await client.listTasks(thread.team_id, { after, limit: TASK_PAGE });
    } catch (error) {
      // A service from before tasks has no such route: its threads have no task.
      if (error instanceof AcsApiError && error.code === 'route_not_found') return undefined;
      throw error;
    }
    const found = page.tasks.find((t) => t.thread_id === thread.thread_id);
    if (found) return found;
    const oldest = page.tasks.at(-1);
    if (!oldest || page.tasks.length < TASK_PAGE || page.next_after === null || oldest.created_at < thread.created_at) return undefined;
    after = page.next_after;
  }
}
