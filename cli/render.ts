/** Human-readable rendering of plans and apply results (the JSON forms are the objects themselves). */
import type { AppliedChange, OutcomeCounts } from '../workflows/apply-orchestration.ts';
import type { ScheduleChange } from '../plan/schedules.ts';
import type { Change } from '../plan/types.ts';
import type { AppliedScheduleChange } from '../temporal/schedules.ts';

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

const SCHEDULE_SYMBOL = { create: '+', update: '~', delete: '-' } as const;

/**
 * One line of a schedule change, in the style of {@link renderChange}:
 * `+ create schedule nightly (pipeline sweep, cron 0 2 * * *, Europe/Berlin)`, with the fields
 * that differ under an update and the id under a delete.
 */
export function renderScheduleChange(change: ScheduleChange): string {
  const fields = change.fields ?? {};
  const when = fields['cron'] ? `cron ${String(fields['cron'])}` : fields['every'] ? `every ${String(fields['every'])}` : '';
  const detail = change.action === 'create' ? [`pipeline ${String(fields['pipeline'])}`, when, String(fields['timezone'])].filter(Boolean).join(', ') : '';
  let line = `  ${SCHEDULE_SYMBOL[change.action]} ${change.action} schedule ${change.name}${detail ? ` (${detail})` : ''}`;
  if (change.action === 'create' && fields['paused'] === true) line += '\n      paused: true';
  if (change.diff) {
    const parts = Object.entries(change.diff).map(([field, d]) => `${field}: ${JSON.stringify(d.from)} -> ${JSON.stringify(d.to)}`);
    line += `\n      ${parts.join('\n      ')}`;
  }
  if (change.action === 'delete') line += ` (${change.id})`;
  return line;
}

/**
 * The plan as text with its schedule changes after the resource changes; the same as
 * {@link renderPlan} when there are none. The summary line counts both, deletes (schedules only)
 * included.
 */
export function renderPlanWithSchedules(changes: Change[], schedules: ScheduleChange[]): string {
  if (schedules.length === 0) return renderPlan(changes);
  const count = (action: string) => [...changes, ...schedules].filter((c) => c.action === action).length;
  const lines = [...changes.map(renderChange), ...schedules.map(renderScheduleChange)];
  return [...lines, '', `Plan: ${count('create')} to create, ${count('update')} to update, ${count('delete')} to delete.`].join('\n');
}

/** The line printed as an applied schedule change completes: `  schedule nightly: created`. */
export function renderAppliedSchedule(change: AppliedScheduleChange): string {
  return `  schedule ${change.name}: ${change.outcome}`;
}

/** The closing line of an apply that also reconciled schedules; {@link renderApplySummary} when none changed. */
export function renderApplySummaryWithSchedules(applied: AppliedChange[], omitted: OutcomeCounts | undefined, schedules: AppliedScheduleChange[]): string {
  if (schedules.length === 0) return renderApplySummary(applied, omitted);
  const resources = renderApplySummary(applied, omitted);
  const head = resources.startsWith('Apply complete: ') ? resources.slice(0, -1) : 'Apply complete: resources unchanged';
  const count = (outcome: AppliedScheduleChange['outcome']) => schedules.filter((s) => s.outcome === outcome).length;
  return `${head}; schedules: ${count('created')} created, ${count('updated')} updated, ${count('deleted')} deleted.`;
}
