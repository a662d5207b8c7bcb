/**
 * What each delete of a plan takes along, for the plan a user reads before consenting: a team's
 * and the organization's from the service's deletion previews; an edge's threads and their
 * messages; an agent's or human's edges (deleted before it) and their threads and messages.
 * Pure: the reads are the caller's (`readDeletionPreviews`, an activity the CLI calls).
 */
import type { Cascade, Change } from './types.ts';

/** The previews a plan's deletes need, by id. */
export interface DeletionPreviews {
  teams: Record<string, Cascade>;
  /** An edge's threads and the messages in them. */
  edges: Record<string, { threads: number; messages: number }>;
  organization?: Cascade;
  /** Why the service would refuse the organization's delete besides protection: the key's own (`forbidden`), or it provisioned others (`in_use`). */
  organizationRefusal?: { code: 'forbidden' | 'in_use'; message: string } | undefined;
}

/** The ids whose previews the deletes of `changes` need. */
export function previewsNeeded(changes: readonly Change[]): { teams: string[]; edges: string[]; organization?: string } {
  const ids = (kind: Change['kind']) => changes.flatMap((c) => (c.action === 'delete' && c.kind === kind ? [c.id] : []));
  const [organization] = ids('organization');
  return { teams: ids('team'), edges: ids('edge'), ...(organization ? { organization } : {}) };
}

/**
 * `changes` with each delete's `cascade` filled in from `previews` (see the module's comment).
 * A participant's cascade counts the edges of the plan it is on. Raises nothing.
 */
export function withCascades<C extends Change>(changes: readonly C[], previews: DeletionPreviews): C[] {
  return changes.map((change) => {
    if (change.action !== 'delete') return change;
    switch (change.kind) {
      case 'organization':
        return previews.organization ? { ...change, cascade: previews.organization } : change;
      case 'team': {
        const cascade = previews.teams[change.id];
        return cascade ? { ...change, cascade } : change;
      }
      case 'edge': {
        const cascade = previews.edges[change.id];
        return cascade ? { ...change, cascade } : change;
      }
      case 'agent':
      case 'human': {
        const edges = changes.flatMap((c) => (c.action === 'delete' && c.kind === 'edge' && c.team === change.team && c.participants.includes(change.name) ? [c.id] : []));
        const cascade = { edges: edges.length, threads: 0, messages: 0 };
        for (const id of edges) {
          cascade.threads += previews.edges[id]?.threads ?? 0;
          cascade.messages += previews.edges[id]?.messages ?? 0;
        }
        return { ...change, cascade };
      }
      default:
        return change;
    }
  });
}
