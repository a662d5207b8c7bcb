/**
 * Which change of a plan waits for which: the order the service needs, and no more, so that
 * the orchestration runs everything else in parallel, and `--target` brings a change's
 * dependencies along (`plan/selection.ts`). Pure: the workflow's orchestration uses it.
 *
 * - Every change waits for the organization's create.
 * - A participant's or edge's create or update waits for its team's create; an edge's create
 *   for its participants' creates (it needs their ids).
 * - A create, or a rename, waits for the delete that frees its name: a team's name among the
 *   teams, a participant's among the team's agents and humans, an edge's pair in its team, a
 *   webhook's among the organization's webhooks. A webhook's create waits for every webhook
 *   delete (an organization holds at most 20: a replaced one must be gone first).
 * - A participant's delete waits for the deletes of the edges it is on (the service refuses to
 *   delete a participant that is still on an edge: `in_use`): edges before participants.
 * - An agent's create or update that names an approver (`tools.approval.by`) waits for the
 *   create, or the rename, of the human of that name in its team: the service refuses an
 *   approver who is no human of the team (422 `unknown_reference`).
 */
import { approverOf } from './agent-tools.ts';
import type { Change } from './types.ts';

/** The scope a name is unique in, as a key: `team`, `participant` of a team, `edge` pair of a team. */
function nameKey(change: Change, name: string = change.name): string | undefined {
  switch (change.kind) {
    case 'team':
      return `team\u0000${name}`;
    case 'webhook':
      return `webhook\u0000${name}`;
    case 'agent':
    case 'human':
      return `participant\u0000${change.team}\u0000${name}`;
    case 'edge': {
      const pair = change.action === 'create' ? change.fields.participants : change.action === 'delete' ? change.participants : undefined;
      return pair && `edge\u0000${change.team}\u0000${[...pair].sort().join('\u0000')}`;
    }
    default:
      return undefined;
  }
}

/**
 * The dependencies of each change: `result[i]` lists the indexes of the changes that change `i`
 * waits for (each once, never `i`). Input: a plan's changes. Raises nothing.
 */
export function dependencies(changes: readonly Change[]): number[][] {
  const teamCreates = new Map<string, number>();
  const participantCreates = new Map<string, number>();
  /** A human's create or rename, by the name it gives (team and name). */
  const humansNamed = new Map<string, number>();
  const deletes = new Map<string, number>();
  const edgeDeletesOf = new Map<string, number[]>();
  const webhookDeletes: number[] = [];
  let organizationCreate: number | undefined;
  const participant = (team: string, name: string) => `${team}\u0000${name}`;
  changes.forEach((change, i) => {
    if (change.action === 'create') {
      if (change.kind === 'organization') organizationCreate = i;
      if (change.kind === 'team') teamCreates.set(change.name, i);
      if (change.kind === 'agent' || change.kind === 'human') participantCreates.set(participant(change.team, change.name), i);
      if (change.kind === 'human') humansNamed.set(participant(change.team, change.name), i);
    }
    if (change.action === 'update' && change.kind === 'human' && change.renamedFrom !== undefined) humansNamed.set(participant(change.team, change.name), i);
    if (change.action === 'delete') {
      if (change.kind === 'webhook') webhookDeletes.push(i);
      const key = nameKey(change);
      if (key) deletes.set(key, i);
      if (change.kind === 'edge') {
        for (const name of change.participants) {
          const at = participant(change.team, name);
          edgeDeletesOf.set(at, [...(edgeDeletesOf.get(at) ?? []), i]);
        }
      }
    }
  });

  return changes.map((change, i) => {
    const on = new Set<number | undefined>([organizationCreate]);
    if (change.kind === 'agent' || change.kind === 'human' || change.kind === 'edge') {
      if (change.action !== 'delete') on.add(teamCreates.get(change.team));
      if (change.action === 'create' && change.kind === 'edge') {
        for (const name of change.fields.participants) on.add(participantCreates.get(participant(change.team, name)));
      }
      if (change.action === 'delete' && change.kind !== 'edge') for (const edge of edgeDeletesOf.get(participant(change.team, change.name)) ?? []) on.add(edge);
      if (change.kind === 'agent' && change.action !== 'delete') {
        const approver = approverOf(change.fields);
        if (approver !== undefined) on.add(humansNamed.get(participant(change.team, approver)));
      }
    }
    if (change.action === 'create' && change.kind === 'webhook') for (const d of webhookDeletes) on.add(d);
    if (change.action === 'create' || (change.action === 'update' && change.renamedFrom !== undefined)) {
      const key = nameKey(change);
      if (key) on.add(deletes.get(key));
    }
    on.delete(i);
    return [...on].filter((d): d is number => d !== undefined);
  });
}
