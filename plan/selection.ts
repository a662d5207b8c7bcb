/**
 * `--target` and `--exclude`: which changes of a plan an apply (or destroy) makes, as Terraform
 * selects them. Pure: the workflow's orchestration applies the same selection to the plan it makes.
 *
 * - A target selects the changes at or under its address (`team/intake` selects the team and its
 *   agents, humans and edges), and everything they depend on comes along (`plan/dependencies.ts`:
 *   the team an agent is created in, the participants an edge joins, the edges a participant's
 *   delete waits for). No target: every change.
 * - An exclude drops the changes at or under its address, a delete whose cascade would take an
 *   excluded resource (a team's delete when one of its agents is excluded), and everything that
 *   depends on a dropped change (an edge whose participant's create is excluded).
 */
import { covers } from './addresses.ts';
import { dependencies } from './dependencies.ts';
import type { Change } from './types.ts';

/** The addresses of `--target` and `--exclude`, each repeatable. */
export interface Selection {
  targets?: readonly string[] | undefined;
  excludes?: readonly string[] | undefined;
}

/** Whether a selection selects anything less than everything. */
export function isPartial(selection: Selection): boolean {
  return (selection.targets?.length ?? 0) + (selection.excludes?.length ?? 0) > 0;
}

/**
 * The changes `selection` keeps, in plan order, and the targets that matched no change (the CLI
 * warns about them). Input: a plan's changes (with the addresses of `addresses.ts`). Raises nothing.
 */
export function selectChanges<C extends Change>(changes: readonly C[], selection: Selection): { changes: C[]; unmatchedTargets: string[] } {
  const targets = selection.targets ?? [];
  const excludes = selection.excludes ?? [];
  if (targets.length + excludes.length === 0) return { changes: [...changes], unmatchedTargets: [] };
  const waits = dependencies(changes);
  const dependents: number[][] = changes.map(() => []);
  waits.forEach((on, i) => on.forEach((d) => dependents[d]?.push(i)));

  /** Marks `start` and everything reachable from it along `next`. */
  const closure = (start: number[], next: number[][]): Set<number> => {
    const seen = new Set<number>();
    const stack = [...start];
    for (let i = stack.pop(); i !== undefined; i = stack.pop()) {
      if (seen.has(i)) continue;
      seen.add(i);
      stack.push(...(next[i] ?? []));
    }
    return seen;
  };
  const where = (test: (change: C) => boolean) => changes.flatMap((change, i) => (test(change) ? [i] : []));

  const selected = targets.length === 0 ? new Set(changes.keys()) : closure(where((c) => targets.some((t) => covers(t, c.address))), waits);
  const unmatchedTargets = targets.filter((t) => !changes.some((c) => covers(t, c.address)));

  // A delete takes along what is under it (the organization's, everything): it goes when any of that is excluded.
  const cascadesTo = (change: C, address: string) => change.action === 'delete' && (change.kind === 'organization' || covers(change.address, address));
  const excluded = closure(where((c) => excludes.some((e) => covers(e, c.address) || cascadesTo(c, e))), dependents);
  return { changes: changes.filter((_, i) => selected.has(i) && !excluded.has(i)), unmatchedTargets };
}
