/** Human-readable rendering of plans and apply results (the JSON forms are the objects themselves). */
import type { AppliedChange, OutcomeCounts } from '../workflows/apply-orchestration.ts';
import type { Change } from '../plan/types.ts';

const SYMBOL = { create: '+', update: '~' } as const;

/** One line of a change: `+ create agent scout (team literature-review)`, with field diffs for updates. */
export function renderChange(change: Change): string {
  const where = change.team ? ` (team ${change.team})` : '';
  let line = `  ${SYMBOL[change.action]} ${change.action} ${change.kind.replace('_', ' ')} ${change.name}${where}`;
  if (change.diff) {
    const parts = Object.entries(change.diff).map(([field, d]) => `${field}: ${JSON.stringify(d.from)} -> ${JSON.stringify(d.to)}`);
    line += `\n      ${parts.join('\n      ')}`;
  }
  return line;
}

/** The plan as text, Terraform-style, ending with a summary line. */
export function renderPlan(changes: Change[]): string {
  if (changes.length === 0) return 'No changes. The live state matches the definition.';
  const creates = changes.filter((c) => c.action === 'create').length;
  const updates = changes.length - creates;
  return [...changes.map(renderChange), '', `Plan: ${creates} to create, ${updates} to update.`].join('\n');
}

/** The line printed as an applied change completes. */
export function renderApplied(change: AppliedChange): string {
  const where = change.team ? ` (team ${change.team})` : '';
  return `  ${change.kind.replace('_', ' ')} ${change.name}${where}: ${change.outcome}`;
}

/** The closing line of an apply; changes made but not listed (`omitted`, very large Temporal applies) are in the counts. */
export function renderApplySummary(applied: AppliedChange[], omitted?: OutcomeCounts): string {
  const notListed = omitted ? omitted.created + omitted.updated + omitted.unchanged : 0;
  if (applied.length === 0 && notListed === 0) return 'No changes. The live state matches the definition.';
  const count = (outcome: AppliedChange['outcome']) => applied.filter((c) => c.outcome === outcome).length + (omitted?.[outcome] ?? 0);
  const more = notListed > 0 ? ` (${notListed} of them not listed above)` : '';
  return `Apply complete: ${count('created')} created, ${count('updated')} updated, ${count('unchanged')} already in place${more}.`;
}
